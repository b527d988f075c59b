/**
 * `epx bsp realise --site PRM --date D`: programme against delivery of a site's day, read
 * over the API (GET realise, an extension of the contract: src/bsp/client.ts).
 * @module
 */
import { calendarDate, required, siteId as readSiteId } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { connectionOptions, readOverApi } from './bsp.ts'
import { formatTable } from '../table.ts'

const spec: CommandSpec = {
  usage: 'epx bsp realise --url URL --cert FILE --key FILE [--ca FILE] [--token-file FILE] --site PRM --date YYYY-MM-DD [--json]',
  dataDir: false,
  summary: 'programme against delivery: a site\'s day, programmed and metered energy per quarter-hour, verdicts',
  about: [
    'Reads over the API (GET realise, a token with the scope outbound:realise) a site\'s day: per',
    'quarter-hour the energy your instruction in force programmed, the energy the site drew, and a',
    'verdict (met, short, curtailment_respected, curtailment_broken, no_data, unconstrained), then the',
    'day\'s totals. Each quarter-hour is judged by your instruction in force at its start (EN_VIGUEUR',
    'when it is not the day\'s); a slot received after its quarter-hour began is late (TARDIF_KWH),',
    'counted apart. Exit code 1 when the service refuses the request.',
  ].join('\n'),
  options: {
    ...connectionOptions,
    site: { type: 'string', arg: 'PRM', help: 'the site (required)' },
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'the day, Europe/Paris (required)' },
    json: { type: 'boolean', help: 'print the answer as the API gives it' },
  },
}

const kwh = (v: number | null | undefined) => v === null || v === undefined ? '–' : v.toFixed(3)

export const realiseCommand = defineCommand(spec, async (args, io) => {
  const siteId = readSiteId(required(args, spec, 'site'), spec)
  const targetDate = calendarDate(required(args, spec, 'date'), spec)
  return readOverApi(args, spec, io, client => client.getRealise({ siteId, targetDate }), ({ realise: b }) => {
    if (args.flag('json')) {
      io.out(JSON.stringify(b))
      return 0
    }
    // The two columns of a day that changed instruction, only then.
    const changed = b.creneaux.some(c => c.instruction_id !== undefined || c.tardif)
    const rows = b.creneaux.filter(c => c.verdict !== 'unconstrained' || c.energie_realisee_kwh !== null || c.tardif)
      .map(c => [c.debut_utc, c.fin_utc, kwh(c.energie_programmee_kwh), kwh(c.energie_realisee_kwh), c.verdict, c.manque_kwh === undefined ? '' : kwh(c.manque_kwh),
        ...(changed ? [c.instruction_id === undefined ? '' : c.instruction_id ?? '–', c.tardif ? kwh(c.tardif.energie_programmee_kwh) : ''] : [])])
    const header = ['DEBUT_UTC', 'FIN_UTC', 'PROGRAMMEE_KWH', 'REALISEE_KWH', 'VERDICT', 'MANQUE_KWH', ...(changed ? ['EN_VIGUEUR', 'TARDIF_KWH'] : [])]
    if (rows.length) for (const line of formatTable([header, ...rows])) io.out(line)
    const t = b.totaux
    io.err(`epx: ${b.site_id} on ${b.target_date} against ${b.instruction_id ?? 'no instruction of yours'}: programmed ${kwh(t.energie_programmee_kwh)} kWh, ` +
      `delivered ${kwh(t.energie_realisee_kwh)} kWh, shortfall ${kwh(t.manque_kwh)} kWh; ` +
      Object.entries(t.verdicts).filter(([, n]) => n > 0).map(([v, n]) => `${n} ${v}`).join(', ') +
      (t.tardifs > 0 ? `; ${t.tardifs} late (received after the quarter-hour began, counted apart)` : ''))
    return 0
  })
})
