/**
 * `epx sites list`: the sites the configured reference host manages, i.e. the site
 * ids a company perimeter and the API calls can name.
 * @module
 */
import { createReferenceHost } from '../../host/reference-host.ts'
import { commandGroup, parseCommand, type CommandSpec } from '../args.ts'
import type { Command } from '../io.ts'
import { readSettings } from '../settings.ts'
import { formatTable } from '../table.ts'

const listSpec: CommandSpec = {
  usage: 'epx sites list [--json]',
  about: 'Lists the sites the reference solver manages (host.sites in epx.config.json): site_id and site_name.',
  options: { json: { type: 'boolean', help: 'print a JSON array of { site_id, site_name }' } },
}

const list: Command = {
  name: 'list',
  summary: 'list the sites the configured host manages',
  async run (argv, io) {
    const args = parseCommand(argv, listSpec, io)
    if (!args) return 0
    const settings = readSettings(io.dataDir)
    const host = createReferenceHost({ dataDir: io.dataDir, sites: settings.host.sites, cycleSeconds: settings.host.cycleSeconds })
    const sites = host.sites.map(s => ({ site_id: s.site_id, site_name: s.site_name }))
    await host.close()
    if (args.flag('json')) {
      io.out(JSON.stringify(sites, null, 2))
      return 0
    }
    for (const line of formatTable([['SITE_ID', 'SITE_NAME'], ...sites.map(s => [s.site_id, s.site_name])])) io.out(line)
    return 0
  },
}

export const sitesCommand: Command = commandGroup('sites', 'the sites the solver manages', [list])
