/**
 * `epx bsp status --date D`: what became of your programmes for a day, read over the API
 * (GET programme-soutirage, an extension of the contract: src/bsp/client.ts).
 * @module
 */
import { calendarDate, required, siteId as readSiteId } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { connectionOptions, readOverApi } from './bsp.ts'
import { formatTable } from '../table.ts'

const spec: CommandSpec = {
  usage: 'epx bsp status --url URL --cert FILE --key FILE [--ca FILE] [--token-file FILE] --date YYYY-MM-DD [--site PRM] [--json]',
  dataDir: false,
  summary: 'what became of your programmes for a day: received, queued, applied (cycle) or superseded',
  about: [
    'Reads over the API (GET programme-soutirage, same certificate and token as push) your company\'s',
    'instructions for a day, newest first: their status (received, queued, applied with the solver',
    'cycle, superseded with the instruction in force when it is yours) and how many of their slots',
    'the feasibility check flagged, and when each was in force (UTC; why not, when it is not:',
    'superseded, withdrawn, late, site-left-perimeter). Exit code 1 when the service refuses the request.',
  ].join('\n'),
  options: {
    ...connectionOptions,
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'the target day, Europe/Paris (required)' },
    site: { type: 'string', arg: 'PRM', help: 'only this site' },
    json: { type: 'boolean', help: 'print the answer as the API gives it' },
  },
}

/** When it was in force (UTC), and why not when it is not: `2026-11-22T05:19:00Z → now`, `never (superseded)`. */
function inForceText (i: { in_force?: ReadonlyArray<{ from: string; until?: string }>; not_in_force_reason?: string }): string {
  const spans = (i.in_force ?? []).map(s => `${s.from} → ${s.until ?? 'now'}`).join(', ') || 'never'
  return i.not_in_force_reason ? `${spans} (${i.not_in_force_reason})` : spans
}

export const statusCommand = defineCommand(spec, async (args, io) => {
  const targetDate = calendarDate(required(args, spec, 'date'), spec)
  const site = args.string('site')
  const siteId = site === undefined ? undefined : readSiteId(site, spec)
  return readOverApi(args, spec, io, client => client.getProgrammeStatus({ targetDate, ...(siteId ? { siteId } : {}) }), ({ status }) => {
    if (args.flag('json')) {
      io.out(JSON.stringify(status))
      return 0
    }
    const rows = status.instructions.map(i => [
      i.instruction_id, i.site_id, i.emitted_at, String(i.periods_count),
      i.status === 'applied' ? `applied (cycle ${i.cycle ?? '?'}, ${i.applied_at ?? ''})`
        : i.status === 'superseded' ? `superseded${i.superseded_by ? ` by ${i.superseded_by}` : ' (a later programme is in force)'}`
          : i.status === 'withdrawn' ? `withdrawn (${i.not_in_force_reason === 'site-left-perimeter' ? 'the site left your perimeter' : 'by the operator'}, ${i.withdrawn_at ?? ''})` : i.status,
      String(i.infeasible_slots),
      inForceText(i),
    ])
    if (rows.length) for (const line of formatTable([['INSTRUCTION_ID', 'SITE_ID', 'EMITTED_AT', 'PERIODS', 'STATUS', 'INFEASIBLE', 'IN FORCE'], ...rows])) io.out(line)
    io.err(`epx: ${status.count} instruction(s) of your company for ${targetDate}${siteId ? ` on ${siteId}` : ''}`)
    return 0
  })
})
