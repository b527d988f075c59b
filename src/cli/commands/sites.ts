/**
 * `epx sites list`: the sites the configured reference host manages, i.e. the site
 * ids a company perimeter and the API calls can name.
 * @module
 */
import { createReferenceHost } from '../../host/reference-host.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { readSettings } from '../settings.ts'
import { printList } from '../table.ts'

const listSpec: CommandSpec = {
  usage: 'epx sites list [--json]',
  summary: 'list the sites the configured host manages',
  about: 'Lists the sites the reference solver manages (host.sites in epx.config.json): site_id and site_name.',
  options: { json: { type: 'boolean', help: 'print a JSON array of { site_id, site_name }' } },
}

const list = defineCommand(listSpec, async (args, io) => {
  const settings = readSettings(io.dataDir)
  const host = createReferenceHost({ dataDir: io.dataDir, sites: settings.host.sites, cycleSeconds: settings.host.cycleSeconds })
  const sites = host.sites.map(s => ({ site_id: s.site_id, site_name: s.site_name }))
  await host.close()
  printList(io.out, args.flag('json'), sites, {
    empty: 'no sites',
    header: ['SITE_ID', 'SITE_NAME'],
    row: s => [s.site_id, s.site_name],
  })
})

export const sitesSubcommands: readonly Command[] = [list]
