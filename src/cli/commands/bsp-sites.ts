/**
 * `epx bsp sites`: your company's perimeter, read over the API (GET sites, an extension of
 * the contract: src/bsp/client.ts), with since when it holds each site.
 * @module
 */
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { connectionOptions, readOverApi } from './bsp.ts'
import { formatTable } from '../table.ts'

const spec: CommandSpec = {
  usage: 'epx bsp sites --url URL --cert FILE --key FILE [--ca FILE] [--token-file FILE] [--json]',
  dataDir: false,
  summary: 'your company\'s perimeter: the sites you may pull and program, and since when you hold each',
  about: [
    'Reads over the API (GET sites, any token of your company) the sites of your company\'s',
    'perimeter, in site order, each with since when your company has held it (UTC). A perimeter',
    'of every site the service manages says so instead of listing them. Exit code 1 when the',
    'service refuses the request.',
  ].join('\n'),
  options: {
    ...connectionOptions,
    json: { type: 'boolean', help: 'print the answer as the API gives it' },
  },
}

export const sitesCommand = defineCommand(spec, async (args, io) => {
  return readOverApi(args, spec, io, client => client.getSites(), ({ sites: body }) => {
    if (args.flag('json')) {
      io.out(JSON.stringify(body))
      return 0
    }
    if (body.perimeter === 'all') {
      io.err('epx: your company\'s perimeter is every site the service manages')
      return 0
    }
    if (body.sites.length) for (const line of formatTable([['SITE_ID', 'HELD_SINCE'], ...body.sites.map(s => [s.site_id, s.held_since ?? '–'])])) io.out(line)
    io.err(`epx: ${body.sites.length} site(s) in your company's perimeter`)
    return 0
  })
})
