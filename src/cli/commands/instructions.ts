/**
 * `epx instructions list|show`: the instructions BSPs sent (one per site of a
 * Programme_Soutirage), their status (received, queued, applied with the solver cycle,
 * superseded) and the kW periods the solver gets from them.
 * @module
 */
import { EpxError } from '../../errors.ts'
import { openInstructions } from '../../store/instructions.ts'
import {
  instructionSummary, instructionViewsOf, listInstructionViews, roundKw, slotConstraints,
} from '../../apply/instruction-view.ts'
import { openInstructionFlags, type FeasibilityFlag } from '../../store/instruction-flags.ts'
import { calendarDate, siteIds as siteIdsOf } from '../args.ts'
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

/** One line: checked and fine, or what is over (the solver applies it anyway). */
function describeFeasibility (f: FeasibilityFlag | undefined): string {
  if (!f) return 'no excess found against the published needs (or none published)'
  const parts: string[] = []
  if (f.infeasibleSlots.length) parts.push(`${f.infeasibleSlots.length} slot(s) with a floor over the available power`)
  if (f.day) parts.push(`${roundKw(f.day.programmedKwh)} kWh programmed for the day, needs ${roundKw(f.day.needsKwh)} kWh, power allows ${roundKw(f.day.availableKwh)} kWh`)
  return `INFEASIBLE: ${parts.join('; ')} (checked against Besoins_Agreges of ${f.checkedAgainst}; applied anyway, the solver decides)`
}

export const instructionsSubcommands: readonly Command[] = [list, show]
