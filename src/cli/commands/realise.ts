/**
 * `epx realise --date D`: programme against delivery for the operator (docs/http-api.md
 * "Programme against delivery"): per site of the day, the energy programmed by the
 * instruction in force against the energy its meter measured, and the slots per verdict;
 * with `--site`, slot by slot. Not `epx deliveries`, which tells who fetched which
 * Besoins_Agreges.
 * @module
 */
import { EpxError } from '../../errors.ts'
import { realisation, realisationCsv, realisationDay, type RealiseBody } from '../../apply/realisation.ts'
import { openCompanies } from '../../store/companies.ts'
import { openInstructions } from '../../store/instructions.ts'
import { openMetering } from '../../store/metering.ts'
import { openTenure } from '../../store/tenure.ts'
import { calendarDate, required, siteId as siteArg } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { withStore } from '../settings.ts'
import { formatTable } from '../table.ts'
import { checkCompanyId } from './companies.ts'

const spec: CommandSpec = {
  usage: 'epx realise --date YYYY-MM-DD [--site PRM] [--company ID] [--json | --csv]',
  about: [
    'Programme against delivery: for each site of that Paris day with an instruction in force or',
    'meter values, the energy programmed against the energy drawn (as the host reported it), the',
    'shortfall, and the quarter-hours per verdict (met, short, curtailment respected or broken,',
    'no data, unconstrained), each quarter-hour against the instruction in force at its start;',
    'a slot received after its quarter-hour began is late, counted apart. --site: that site',
    'slot by slot, with the instruction in force and the holder where they change. --company:',
    'the sites of its perimeter, compared with its own instructions (what its BSP reads with',
    'GET realise).',
    '--json prints the API\'s bodies; --csv one row per site and quarter-hour (a spreadsheet\'s',
    'sums equal the totals).',
  ].join('\n'),
  options: {
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'the target date (required)' },
    site: { type: 'string', arg: 'PRM', help: 'only this site, slot by slot' },
    company: { type: 'string', arg: 'ID', help: 'as this company sees it (its perimeter, its instructions)' },
    json: { type: 'boolean', help: 'print the bodies GET realise answers' },
    csv: { type: 'boolean', help: 'print CSV, one row per site and quarter-hour' },
  },
}

const kwh = (v: number | null | undefined) => v === null || v === undefined ? '–' : v.toFixed(3)

export const realiseCommand = defineCommand(spec, async (args, io) => {
  const targetDate = calendarDate(required(args, spec, 'date'), spec)
  const site = args.string('site')
  if (site !== undefined) siteArg(site, spec)
  const companyId = args.string('company')
  if (companyId !== undefined) checkCompanyId(companyId, spec)
  const bodies = await withStore(io.dataDir, (store, settings) => {
    const company = companyId === undefined ? undefined : openCompanies(store).get(companyId)
    if (companyId !== undefined && !company) throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}' (see 'epx company list')`])
    const { config } = settings
    const tenure = openTenure(store)
    const deps = {
      instructions: openInstructions(store),
      metering: openMetering(store, { now: () => Date.now(), retentionDays: config.inbound.retentionDays }),
      tolerance: config.delivery,
      holders: (siteId: string, fromMs: number, untilMs: number) => tenure.holdersDuring(siteId, fromMs, untilMs),
    }
    // A company's day is the quarter-hours it held (DECISIONS.md "Tenure"), whatever its perimeter is now.
    const only = (s: string) => site === undefined || s === site
    if (site !== undefined) {
      const one = only(site) ? realisation(deps, targetDate, site, companyId) : undefined
      return one ? [one] : []
    }
    return realisationDay(deps, targetDate, only, companyId)
  })
  if (args.flag('csv')) {
    // io.out ends the text with \n: every row then ends with CRLF, as the console's download does.
    io.out(realisationCsv(bodies).replace(/\r\n$/, '\r'))
    return
  }
  if (args.flag('json')) {
    io.out(JSON.stringify(site !== undefined ? bodies[0] ?? null : bodies, null, 2))
    return
  }
  if (bodies.length === 0) {
    io.out(`nothing to compare on ${targetDate}${site ? ` for ${site}` : ''}: no instruction in force and no meter value`)
    return
  }
  if (site !== undefined) printSlots(bodies[0]!, line => io.out(line))
  else printDay(targetDate, bodies, line => io.out(line))
})

function printDay (targetDate: string, bodies: readonly RealiseBody[], out: (line: string) => void): void {
  out(`Programme against delivery, ${targetDate} (kWh; quarter-hours per verdict)`)
  const rows = bodies.map(b => {
    const v = b.totaux.verdicts
    return [b.site_id, b.instruction_id ?? '–', kwh(b.totaux.energie_programmee_kwh), kwh(b.totaux.energie_realisee_kwh), kwh(b.totaux.manque_kwh),
      String(v.met), String(v.short), String(v.curtailment_respected), String(v.curtailment_broken), String(v.no_data), String(b.totaux.tardifs)]
  })
  for (const line of formatTable([['SITE', 'INSTRUCTION', 'PROGRAMMED', 'DELIVERED', 'SHORTFALL', 'MET', 'SHORT', 'CURT OK', 'CURT BROKEN', 'NO DATA', 'LATE'], ...rows])) out(line)
}

function printSlots (b: RealiseBody, out: (line: string) => void): void {
  out(`${b.site_id} on ${b.target_date}, against ${b.instruction_id ?? 'no instruction'} (kWh)`)
  const holders = new Set(b.creneaux.map(c => c.company_id))
  const rows = b.creneaux.filter(c => c.verdict !== 'unconstrained' || c.energie_realisee_kwh !== null || c.tardif)
    .map(c => [c.debut_utc, c.fin_utc, kwh(c.energie_programmee_kwh), kwh(c.energie_realisee_kwh), c.verdict, c.manque_kwh === undefined ? '' : kwh(c.manque_kwh), noteOf(c, holders.size > 1)])
  for (const line of formatTable([['START (UTC)', 'END (UTC)', 'PROGRAMMED', 'DELIVERED', 'VERDICT', 'SHORTFALL', 'NOTE'], ...rows])) out(line)
  const t = b.totaux
  out(`total: programmed ${kwh(t.energie_programmee_kwh)}, delivered ${kwh(t.energie_realisee_kwh)}, shortfall ${kwh(t.manque_kwh)}; ` +
    Object.entries(t.verdicts).filter(([, n]) => n > 0).map(([v, n]) => `${n} ${v}`).join(', ') +
    (t.tardifs > 0 ? `; ${t.tardifs} late (received after the quarter-hour began, counted apart)` : ''))
}

/** What a row says beyond its numbers: another instruction in force, the holder when the day had several, a late slot. */
function noteOf (c: RealiseBody['creneaux'][number], holder: boolean): string {
  const notes: string[] = []
  if (c.instruction_id !== undefined) notes.push(`in force: ${c.instruction_id ?? 'none'}`)
  if (holder && c.company_id !== undefined) notes.push(`holder: ${c.company_id}`)
  if (c.tardif) notes.push(`late: ${kwh(c.tardif.energie_programmee_kwh)} of ${c.tardif.instruction_id}`)
  return notes.join('; ')
}
