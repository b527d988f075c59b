/**
 * The "Programmes" list: a day's received instructions, found at scale. Every filter, the
 * sort and the page are GET query parameters, so a URL can be shared: `company_id` (an
 * admin's choice; a member sees its own company's), `status` (a stored status, or
 * `infeasible`, or `late`), `q` (a site's id or name, in part), `sort`, and the keyset
 * cursor `after` / `before` (`keyset.ts`). The counts per status are over the whole
 * filtered set but the status, so each one is the size of the list its link gives.
 *
 * The read is the day's heads (`Instructions.headsOf`: no slot decoded) and their status;
 * only the page's rows are rendered. A member sees the programmes its company sent, and
 * nothing of another company's, not even the id of one that superseded its own.
 * @module
 */
import type { Instruction, InstructionState } from '../../contract/instruction.ts'
import { readUtcInstant } from '../../contract/instants.ts'
import type { FeasibilityFlag } from '../../store/instruction-flags.ts'
import type { Site } from '../../host/contract.ts'
import { ownCompany } from '../perimeter.ts'
import type { Viewer } from '../viewer.ts'
import { resolvePair, type Loaded } from './besoins-model.ts'
import { cursorOf, keysetPage } from './keyset.ts'
import { redact, type ProgrammesDeps } from './programmes-model.ts'
import { checkOf, type FeasibilityCheck } from './feasibility.ts'

/** What the status filter may ask: a stored status, or one of the two flags a reader looks for. */
export const STATUS_FILTERS = ['received', 'queued', 'applied', 'superseded', 'withdrawn', 'infeasible', 'late'] as const
export type StatusFilter = typeof STATUS_FILTERS[number]

export const SORTS = ['emission', '-emission', 'site', '-site'] as const
export type ProgrammesSort = typeof SORTS[number]

export interface ProgrammesQuery {
  readonly site_id?: string
  readonly target_date?: string
  readonly q?: string
  readonly company_id?: string
  readonly status?: string
  readonly sort?: string
  readonly after?: string
  readonly before?: string
}

/** An instruction of the list: its head (no slots), its status and what became of it. */
export interface ListedInstruction {
  readonly instruction: Omit<Instruction, 'slots'> & { readonly state: InstructionState; readonly periodsCount: number }
  /** For a superseded one: the next later of its site and day (named only when the viewer's company sent it). */
  readonly supersededBy?: { readonly instructionId: string; readonly companyId: string }
  readonly feasibility?: FeasibilityFlag
  /**
   * Every period had begun before it was received: kept as `received`, never in force
   * (DECISIONS.md "Inbound"; `apply/enqueue.ts` `isLate`). Told by the effective index: a
   * `received` instruction that is not its site's effective one is one the save found late.
   */
  readonly late: boolean
  /** Its check against the published needs (`feasibility.ts`): read for the page's rows only. */
  readonly check?: FeasibilityCheck
  readonly companyName?: string
}

export interface ProgrammesFilter {
  readonly siteId?: string
  readonly q: string
  /** An admin's choice (a member's list is its company's, whatever the URL says). */
  readonly companyId?: string
  readonly status?: StatusFilter
  readonly sort: ProgrammesSort
}

export interface ProgrammesModel {
  readonly targetDate: string
  readonly filter: ProgrammesFilter
  /** An admin's choice of company: those that sent a programme for the day; undefined for a member. */
  readonly companies?: readonly string[]
  /** Per status filter, over the filtered set without the status filter; `all` is that set's size. */
  readonly counts: Readonly<Record<StatusFilter | 'all', number>>
  /** Rows the whole filter selects, over every page. */
  readonly total: number
  /** This page's rows. */
  readonly views: readonly ListedInstruction[]
  /** The solver's sites of this page's rows: their names are the ones shown (`declared.ts`). */
  readonly sites: readonly Site[]
  readonly previous?: string
  readonly next?: string
  /** True when the page was asked by a cursor (a link back to the first page is shown). */
  readonly paged: boolean
}

export async function loadProgrammes (deps: ProgrammesDeps, viewer: Viewer, q: ProgrammesQuery): Promise<Loaded<ProgrammesModel>> {
  // Same site and day rules as the "Besoins agrégés" page; no site named means all of them.
  const pair = await resolvePair(deps, viewer, { site_id: q.site_id, target_date: q.target_date })
  if (pair.status !== 200) return pair
  const status = q.status || undefined
  if (status !== undefined && !(STATUS_FILTERS as readonly string[]).includes(status)) return { status: 400, message: `Statut « ${status} » inconnu : ${STATUS_FILTERS.join(', ')}, ou rien pour tous.` }
  const sort = (q.sort || 'emission') as ProgrammesSort
  if (!SORTS.includes(sort)) return { status: 400, message: `Tri « ${sort} » inconnu : ${SORTS.join(', ')}.` }
  const cursor = cursorOf(q.after, q.before)
  if ('error' in cursor) return { status: 400, message: cursor.error }
  const own = ownCompany(viewer)
  const filter: ProgrammesFilter = {
    ...(q.site_id ? { siteId: pair.site!.site_id } : {}),
    q: (q.q ?? '').trim(),
    ...(own === undefined && q.company_id ? { companyId: q.company_id } : {}),
    ...(status ? { status: status as StatusFilter } : {}),
    sort,
  }
  const all = listedOfDay(deps, pair.targetDate)
  const companies = own === undefined ? [...new Set(all.map(v => v.instruction.companyId))].sort() : undefined
  const company = own ?? filter.companyId
  const needle = filter.q.toLowerCase()
  const selected = all.filter(v => (filter.siteId === undefined || v.instruction.siteId === filter.siteId) &&
    (company === undefined || v.instruction.companyId === company) &&
    (needle === '' || v.instruction.siteId.includes(needle) || v.instruction.siteName.toLowerCase().includes(needle)))
  const counts = Object.fromEntries([...STATUS_FILTERS, 'all'].map(s => [s, 0])) as Record<StatusFilter | 'all', number>
  for (const v of selected) for (const s of statusesOf(v)) counts[s]++
  counts.all = selected.length
  const rows = filter.status === undefined ? selected : selected.filter(v => statusesOf(v).includes(filter.status!))
  const page = keysetPage(rows, keyOf(sort), sort.startsWith('-'), cursor)
  const views = page.rows.map(v => shown(deps, redact(v, own)))
  const onPage = new Set(views.map(v => v.instruction.siteId))
  const sites = pair.sites.filter(s => onPage.has(s.site_id))
  return {
    status: 200,
    model: { targetDate: pair.targetDate, filter, ...(companies ? { companies } : {}), counts, total: rows.length, views, sites, previous: page.previous, next: page.next, paged: q.after !== undefined || q.before !== undefined },
  }
}

/** A row of the page with what only its rendering needs: its check and its company's name. */
function shown (deps: ProgrammesDeps, v: ListedInstruction): ListedInstruction {
  const check = checkOf(v.feasibility, deps.revisions, v.instruction)
  const companyName = deps.companies.get(v.instruction.companyId)?.name
  return { ...v, ...(check ? { check } : {}), ...(companyName !== undefined ? { companyName } : {}) }
}

/** The status filters a row answers to: its stored status, and `infeasible` / `late` where they apply. */
function statusesOf (v: ListedInstruction): StatusFilter[] {
  const out: StatusFilter[] = [v.instruction.state.status]
  if (v.feasibility) out.push('infeasible')
  if (v.late) out.push('late')
  return out
}

/** Every instruction of the day with its superseder, its flag and whether it came late: heads only. */
function listedOfDay (deps: ProgrammesDeps, targetDate: string): ListedInstruction[] {
  const heads = deps.instructions.headsOf(targetDate).map(h => ({ ...h.head, state: h.state, periodsCount: h.periodsCount, emitted: emittedKey(h.head.emittedAt) }))
  // A superseded instruction's superseder is the next one of its site by emitted_at.
  const bySite = new Map<string, typeof heads>()
  for (const h of heads) {
    const list = bySite.get(h.siteId)
    if (list) list.push(h)
    else bySite.set(h.siteId, [h])
  }
  const next = new Map<(typeof heads)[number], (typeof heads)[number]>()
  for (const list of bySite.values()) {
    list.sort((a, b) => a.emitted < b.emitted ? -1 : a.emitted > b.emitted ? 1 : 0)
    for (let k = 0; k + 1 < list.length; k++) next.set(list[k]!, list[k + 1]!)
  }
  return heads.map(h => {
    const { emitted: _, ...instruction } = h
    const later = instruction.state.status === 'superseded' ? next.get(h) : undefined
    const feasibility = deps.flags?.get(instruction.instructionId, instruction.siteId)
    const late = instruction.state.status === 'received' && deps.instructions.effectiveId(targetDate, instruction.siteId) !== instruction.instructionId
    return {
      instruction,
      ...(later ? { supersededBy: { instructionId: later.instructionId, companyId: later.companyId } } : {}),
      ...(feasibility ? { feasibility } : {}),
      late,
    }
  })
}

/**
 * emitted_at as text that sorts as the instants do (the wire form does not: `…T123000.250Z`
 * sorts before `…T123000Z`): milliseconds and the nanoseconds within, zero-padded.
 */
function emittedKey (emittedAt: string): string {
  const at = readUtcInstant(emittedAt)
  const { ms, nanos } = typeof at === 'string' ? { ms: 0, nanos: 0 } : at
  return `${String(ms).padStart(15, '0')}.${String(nanos).padStart(6, '0')}`
}

/**
 * The row's key in the list's order, unique within a day (an instruction is one per site):
 * by emitted_at then site, or by site then emitted_at; the instruction id last.
 */
function keyOf (sort: ProgrammesSort): (v: ListedInstruction) => string {
  const bySite = sort === 'site' || sort === '-site'
  return ({ instruction: i }) => bySite
    ? `${i.siteId}|${emittedKey(i.emittedAt)}|${i.instructionId}`
    : `${emittedKey(i.emittedAt)}|${i.siteId}|${i.instructionId}`
}
