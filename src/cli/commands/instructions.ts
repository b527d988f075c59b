/**
 * `epx instructions list|show|withdraw`: the instructions BSPs sent (one per site of a
 * Programme_Soutirage), their status (received, queued, applied with the solver cycle,
 * superseded, withdrawn), the kW periods the solver gets from them, and the operator's
 * withdrawal of a company's (DECISIONS.md "Tenure: who holds a site, and when").
 * @module
 */
import { EpxError } from '../../errors.ts'
import { openInstructions } from '../../store/instructions.ts'
import { withdrawInstructions } from '../../store/withdrawals.ts'
import { openCompanies } from '../../store/companies.ts'
import { cliActor } from '../../store/audit.ts'
import { checkCompanyId } from './companies.ts'
import {
  instructionSummary, instructionViewsOf, listInstructionViews, roundKw, slotConstraints,
} from '../../apply/instruction-view.ts'
import { openInstructionFlags, type FeasibilityFlag } from '../../store/instruction-flags.ts'
import { calendarDate, required, siteIds as siteIdsOf } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { formatTable, printList } from '../table.ts'

const site = { type: 'string', multiple: true, arg: 'PRM', help: 'only this site (PRM + 14 digits)' } as const
const json = { type: 'boolean', help: 'print JSON instead of a table' } as const

const listSpec: CommandSpec = {
  usage: 'epx instructions list [--site PRM...] [--date YYYY-MM-DD] [--json]',
  summary: 'list received instructions and their status',
  about: 'Lists received instructions, one per programme and site, with their status.',
  options: { site, date: { type: 'string', arg: 'YYYY-MM-DD', help: 'only this target date (Europe/Paris day)' }, json },
}

const showSpec: CommandSpec = {
  usage: 'epx instructions show INSTRUCTION_ID [--site PRM...] [--json]',
  summary: 'show an instruction: status and kW periods',
  about: 'Shows an instruction: who sent it, its status, and each period as the solver gets it (min_kw floor or max_kw 0).',
  options: { site, json },
  positionals: ['INSTRUCTION_ID'],
}

const list = defineCommand(listSpec, async (args, io) => {
  const siteIds = siteIdsOf(args, listSpec)
  const date = args.string('date')
  const targetDate = date === undefined ? undefined : calendarDate(date, listSpec)
  const found = await withStore(io.dataDir, store => listInstructionViews(openInstructions(store), { siteIds, targetDate }))
  if (args.flag('json')) {
    io.out(JSON.stringify(found.map(instructionSummary), null, 2))
    return
  }
  printList(io.out, false, found, {
    empty: 'no instructions',
    header: ['INSTRUCTION_ID', 'SITE_ID', 'TARGET_DATE', 'STATUS', 'CYCLE', 'PERIODS', 'COMPANY', 'RECEIVED_AT'],
    row: ({ instruction: i }) => [
      i.instructionId, i.siteId, i.targetDate, i.state.status, i.state.cycle === undefined ? '-' : String(i.state.cycle),
      String(i.slots.length), i.companyId, i.receivedAt,
    ],
  })
})

const show = defineCommand(showSpec, async (args, io) => {
  const [id] = args.positionals as [string]
  const siteIds = siteIdsOf(args, showSpec)
  const found = await withStore(io.dataDir, store => {
    const flags = openInstructionFlags(store)
    return instructionViewsOf(openInstructions(store), id, { siteIds })
      .map(v => ({ ...v, feasibility: flags.get(v.instruction.instructionId, v.instruction.siteId) }))
  })
  if (found.length === 0) {
    const where = siteIds.length ? ` for site ${siteIds.join(', ')}` : ''
    throw new EpxError('EPX_NOT_FOUND', [`no instruction ${id}${where}; see 'epx instructions list'`])
  }
  if (args.flag('json')) {
    io.out(JSON.stringify(found.map(v => ({ ...instructionSummary(v), feasibility: v.feasibility ?? null, periods: slotConstraints(v.instruction).map(({ energyKwh: _, ...p }) => p) })), null, 2))
    return
  }
  found.forEach(({ instruction: i, supersededBy, feasibility }, n) => {
    if (n > 0) io.out('')
    const status = i.state.status + (i.state.cycle === undefined ? '' : ` (solver cycle ${i.state.cycle})`) +
      (i.state.reason === undefined ? '' : i.state.reason === 'site-left-perimeter' ? ' (the site left the company\'s perimeter)' : ' (by the operator)') +
      (supersededBy ? ` by ${supersededBy.instructionId}` : '') + ` since ${i.state.at}`
    for (const line of formatTable([
      ['instruction', i.instructionId],
      ['site', `${i.siteId}${i.siteName ? ` (${i.siteName})` : ''}`],
      ['target date', i.targetDate],
      ['emitted', `${i.emittedAt} by ${i.emittedBy}`],
      ['received', `${i.receivedAt} from company ${i.companyId}, token ${i.tokenId}`],
      ['certificate', i.certFingerprint256],
      ['status', status],
      ['periods', `${i.slots.length} of ${i.slotDurationSecs} s`],
      ['feasibility', describeFeasibility(feasibility)],
    ])) io.out(line)
    if (i.slots.length === 0) {
      io.out('(no periods: this instruction clears the site\'s constraints for the day)')
      return
    }
    io.out('')
    const over = new Map((feasibility?.infeasibleSlots ?? []).map(s => [s.startUtc, s.availableKw]))
    const rows = slotConstraints(i).map(p => [
      p.startUtc, p.endUtc, String(p.energyKwh),
      p.minKw !== undefined ? `min_kw ${roundKw(p.minKw)}` : `max_kw ${p.maxKw}`,
      over.has(p.startUtc) ? `over the available ${roundKw(over.get(p.startUtc)!)} kW` : '',
    ])
    for (const line of formatTable([['START_UTC', 'END_UTC', 'ENERGY_KWH', 'CONSTRAINT', 'FEASIBILITY'], ...rows])) io.out(line)
  })
})

const withdrawSpec: CommandSpec = {
  usage: 'epx instructions withdraw --company ID [--site PRM...] [--from YYYY-MM-DD]',
  summary: 'withdraw a company\'s instructions (no longer in force)',
  about: [
    'Withdraws the company\'s instructions whose day is not over (of these sites, from this',
    'target date; default: every site, from today in Europe/Paris): their status becomes',
    '`withdrawn` (reason `withdrawn`), the instruction in force for each site and day becomes',
    'the holder\'s latest one not withdrawn, or none, and the running service hands that to the',
    'solver\'s next cycle. Audited. A suspended company\'s instructions stay in force until this.',
  ].join('\n'),
  options: {
    company: { type: 'string', arg: 'ID', help: 'the company whose instructions are withdrawn (required)' },
    site,
    from: { type: 'string', arg: 'YYYY-MM-DD', help: 'the first target date (default and earliest: today)' },
  },
}

const withdraw = defineCommand(withdrawSpec, async (args, io) => {
  const companyId = checkCompanyId(required(args, withdrawSpec, 'company'), withdrawSpec)
  const siteIds = siteIdsOf(args, withdrawSpec)
  const from = args.string('from')
  const fromDate = from === undefined ? undefined : calendarDate(from, withdrawSpec, 'from')
  const withdrawn = await withStore(io.dataDir, store => {
    if (!openCompanies(store).get(companyId)) throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}' (see 'epx company list')`])
    return withdrawInstructions(store, { companyId, siteIds, ...(fromDate ? { fromDate } : {}), actor: cliActor(), atMs: Date.now() })
  })
  if (withdrawn.length === 0) {
    io.out(`no instruction of company ${companyId} to withdraw (none in force or received for a day not over${siteIds.length ? ` on ${siteIds.join(', ')}` : ''})`)
    return
  }
  for (const line of formatTable([['INSTRUCTION_ID', 'SITE_ID', 'TARGET_DATE'], ...withdrawn.map(w => [w.instructionId, w.siteId, w.targetDate])])) io.out(line)
  io.out(`withdrew ${withdrawn.length} instruction(s) of company ${companyId} at ${withdrawn[0]!.at}; the running service hands the solver what is in force now at its next cycle`)
})

/** One line: checked and fine, or what is over (the solver applies it anyway). */
function describeFeasibility (f: FeasibilityFlag | undefined): string {
  if (!f) return 'no excess found against the published needs (or none published)'
  const parts: string[] = []
  if (f.infeasibleSlots.length) parts.push(`${f.infeasibleSlots.length} slot(s) with a floor over the available power`)
  if (f.day) parts.push(`${roundKw(f.day.programmedKwh)} kWh programmed for the day, needs ${roundKw(f.day.needsKwh)} kWh, power allows ${roundKw(f.day.availableKwh)} kWh`)
  return `INFEASIBLE: ${parts.join('; ')} (checked against Besoins_Agreges of ${f.checkedAgainst}; applied anyway, the solver decides)`
}

export const instructionsSubcommands: readonly Command[] = [list, show, withdraw]
