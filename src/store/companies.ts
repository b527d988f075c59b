/**
 * Company records: id, name, status, certificate binding and perimeter.
 * The rules that use them live in `auth/tenancy.ts`.
 * @module
 */
import type { Store } from './open-store.ts'
import { EpxError } from '../errors.ts'
import { openGeneration } from './generation.ts'
import { openAudit, type AuditActor } from './audit.ts'
import { openTenure } from './tenure.ts'
import { auditWithdrawals, openWithdrawals } from './withdrawals.ts'
import { parisDateOf } from '../contract/paris-day.ts'
import { openEvents } from './events.ts'

export interface CompanyRecord {
  readonly id: string
  readonly name: string
  readonly status: 'active' | 'suspended'
  /** Canonical DN the client certificate must carry, e.g. `CN=acme-bsp,O=ACME`. */
  readonly certSubject: string
  /**
   * SHA-256 fingerprints (`AB:CD:…`, as node prints them) its certificate must have one
   * of; several at once so a renewal has no gap. Absent or empty: the subject decides.
   */
  readonly certPins?: readonly string[]
  /** Sites the company may see and program. */
  readonly perimeter: 'all' | readonly string[]
  readonly createdAt: string
  /**
   * Its own request budgets (`epx company limits`), each in place of the configuration's
   * `api.rateLimit` (DECISIONS.md "Rate limits and quotas"); absent: the configuration's.
   */
  readonly rateLimit?: { readonly get?: RequestBudget; readonly post?: RequestBudget }
  /**
   * Its own storage quota, bytes of programmes a Paris day (`epx company limits
   * --quota-bytes`), in place of `inbound.maxBytesPerCompanyPerDay`; absent: the configuration's.
   */
  readonly quotaBytesPerDay?: number
}

/** A token bucket's budget: its refill rate and its size. */
export interface RequestBudget {
  readonly perSecond: number
  readonly burst: number
}

export const COMPANY_ID = /^[a-z0-9][a-z0-9-]{1,62}$/

/** The fingerprints pinned for a company (none: the subject decides). */
export function pinsOf (c: CompanyRecord): readonly string[] {
  return c.certPins ?? []
}

/** The sites two perimeters share: `all` when either is "all sites" (it overlaps every other), else the ids (none: `[]`). */
export function sharedSites (a: CompanyRecord['perimeter'], b: CompanyRecord['perimeter']): 'all' | string[] {
  if (a === 'all' || b === 'all') return 'all'
  const set = new Set(a)
  return b.filter(s => set.has(s))
}

/** Two active companies whose perimeters share sites. */
export interface PerimeterOverlap {
  readonly a: CompanyRecord
  readonly b: CompanyRecord
  readonly shared: 'all' | readonly string[]
}

/** The first active company of `others` (not `c` itself) whose perimeter shares a site with `c`'s. */
export function overlapOf (c: CompanyRecord, others: Iterable<CompanyRecord>): PerimeterOverlap | undefined {
  for (const o of others) {
    if (o.id === c.id || o.status !== 'active') continue
    const shared = sharedSites(c.perimeter, o.perimeter)
    if (shared === 'all' || shared.length > 0) return { a: c, b: o, shared }
  }
  return undefined
}

/** Every pair of active companies whose perimeters overlap: stored before one BSP per site was the rule. */
export function perimeterOverlaps (companies: readonly CompanyRecord[]): PerimeterOverlap[] {
  const active = companies.filter(c => c.status === 'active')
  const out: PerimeterOverlap[] = []
  for (let i = 0; i < active.length; i++) {
    for (let j = i + 1; j < active.length; j++) {
      const shared = sharedSites(active[i]!.perimeter, active[j]!.perimeter)
      if (shared === 'all' || shared.length > 0) out.push({ a: active[i]!, b: active[j]!, shared })
    }
  }
  return out
}

/** What the shared sites are, in a sentence's words. */
export function describeShared (o: PerimeterOverlap): string {
  if (o.shared !== 'all') return `site(s) ${o.shared.slice(0, 5).join(', ')}${o.shared.length > 5 ? ` and ${o.shared.length - 5} more` : ''}`
  const whole = [o.a, o.b].filter(c => c.perimeter === 'all').map(c => c.id)
  return `every site (the perimeter of ${whole.join(' and of ')} is "all sites")`
}

/**
 * DECISIONS.md "Authentication and tenancy": one BSP per site. The error when `c` would
 * be active with a perimeter that overlaps another active company's; `details.company`
 * names the other company (the console words it in its own language).
 */
function overlapError (o: PerimeterOverlap): EpxError {
  return new EpxError('EPX_CONFLICT', [
    `the perimeter of company ${o.a.id} would share ${describeShared(o)} with active company ${o.b.id}'s: one BSP per site, ` +
    `so that no company's programme can supersede another's. Narrow ${o.b.id}'s perimeter first (epx company perimeter ${o.b.id} --sites PRM,...), ` +
    `or suspend it, or give ${o.a.id} other sites`,
  ], { details: { company: o.b.id, shared: o.shared === 'all' ? 'all' : o.shared.join(',') } })
}

export interface CompaniesOptions {
  /**
   * Refuse a write that makes two active perimeters overlap (default true). Off only where
   * records are written as stored, overlaps included (tests of data from before the rule).
   */
  readonly onePerSite?: boolean
  /** When changes happen (default: the system clock). */
  readonly now?: () => number
}

/** Who makes a change: kept with it in the perimeter history (tenure.ts). */
export interface ChangedBy {
  readonly actor: AuditActor
}

/** A change whose actor was not said: the plugin's own. */
const HOST: ChangedBy = { actor: { kind: 'host' } }

/** The company records: what the door and the CLI may ask of them. */
export interface Companies {
  get(id: string): CompanyRecord | undefined
  list(): CompanyRecord[]
  /** EPX_CONFLICT when the id is taken, or when an active company's perimeter would overlap another's (one BSP per site). */
  add(c: CompanyRecord, by?: ChangedBy): Promise<void>
  /**
   * Rewrites a record with `change`; EPX_NOT_FOUND when there is no such company;
   * EPX_CONFLICT when the change makes it active (a resume) or changes an active
   * company's perimeter so that it overlaps another active company's.
   */
  update(id: string, change: (c: CompanyRecord) => CompanyRecord, by?: ChangedBy): Promise<CompanyRecord>
  /** Replaces the pins; an update, so the generation moves and open connections see it. */
  setPins(id: string, change: (pins: readonly string[]) => readonly string[], by?: ChangedBy): Promise<CompanyRecord>
}

export function openCompanies (store: Store, opts: CompaniesOptions = {}): Companies {
  const db = store.db<CompanyRecord>('companies')
  const generation = openGeneration(store)
  const onePerSite = opts.onePerSite ?? true
  const now = opts.now ?? Date.now
  const tenure = openTenure(store)
  const withdrawals = openWithdrawals(store)
  const audit = openAudit(store)
  const events = openEvents(store)
  /**
   * Inside the write, before the record is put: the change joins the perimeter history,
   * and a site that changes hands withdraws its former holder's instructions of the
   * days not over (DECISIONS.md "Tenure: who holds a site, and when"), all in this write.
   */
  const tenureChange = (before: CompanyRecord | undefined, after: CompanyRecord, by: ChangedBy): void => {
    if (before && before.status === after.status && samePerimeter(before.perimeter, after.perimeter)) return
    const atMs = now()
    const holders = tenure.recordSync(before, after, by.actor, atMs)
    const moved = (siteId: string): boolean => holders.before.holderOf(siteId) !== holders.after.holderOf(siteId)
    const withdrawn = withdrawals.withdrawSync({
      fromDate: parisDateOf(new Date(atMs)),
      site: moved,
      of: (siteId, companyId) => holders.before.holderOf(siteId) === companyId,
      holderAfter: siteId => holders.after.holderOf(siteId),
      reason: 'site-left-perimeter',
      atMs,
    })
    auditWithdrawals(audit, withdrawn, by.actor, atMs)
    if (!before || !samePerimeter(before.perimeter, after.perimeter)) {
      events.appendSync([{ companyId: after.id, type: 'perimetre.modifie', fields: perimeterChange(before?.perimeter ?? [], after.perimeter) }], atMs)
    }
  }
  // String keys only: the msgpack shapes live under a symbol key of the same db.
  const all = (): CompanyRecord[] => [...db.getRange()].filter(e => typeof e.key === 'string').map(e => e.value)
  /** Read inside the write, so two writers cannot each pass the check and overlap. */
  const conflictOf = (c: CompanyRecord): PerimeterOverlap | undefined =>
    onePerSite && c.status === 'active' ? overlapOf(c, all()) : undefined
  const companies: Companies = {
    get (id: string): CompanyRecord | undefined {
      return db.get(id)
    },
    list: all,
    async add (c: CompanyRecord, by = HOST): Promise<void> {
      const outcome = await store.writeDurable((): 'taken' | PerimeterOverlap | undefined => {
        if (db.get(c.id)) return 'taken'
        const overlap = conflictOf(c)
        if (overlap) return overlap
        tenureChange(undefined, c, by)
        db.putSync(c.id, c)
        generation.bump()
        return undefined
      })
      if (outcome === 'taken') throw new EpxError('EPX_CONFLICT', [`company ${c.id} already exists`], { details: { company: c.id } })
      if (outcome) throw overlapError(outcome)
    },
    async update (id: string, change: (c: CompanyRecord) => CompanyRecord, by = HOST): Promise<CompanyRecord> {
      const outcome = await store.writeDurable((): CompanyRecord | PerimeterOverlap | undefined => {
        const c = db.get(id)
        if (!c) return undefined
        const n = change(c)
        // Checked only when it becomes active or its perimeter changes: a suspension or a
        // new pin of a company that overlaps from before the rule stays possible.
        if (n.status === 'active' && (c.status !== 'active' || !samePerimeter(c.perimeter, n.perimeter))) {
          const overlap = conflictOf(n)
          if (overlap) return overlap
        }
        tenureChange(c, n, by)
        db.putSync(id, n)
        generation.bump()   // a suspension or a new binding reaches cached callers
        return n
      })
      if (!outcome) throw new EpxError('EPX_NOT_FOUND', [`no company ${id}`])
      if ('shared' in outcome) throw overlapError(outcome)
      return outcome
    },
    setPins (id: string, change: (pins: readonly string[]) => readonly string[], by?: ChangedBy): Promise<CompanyRecord> {
      return companies.update(id, c => ({ ...c, certPins: [...change(pinsOf(c))] }), by)
    },
  }
  return companies
}

/**
 * The members of a `perimetre.modifie` (DECISIONS.md "Events for BSPs"): the sites added
 * and removed between two lists; `all_sites` whether the perimeter is now every site.
 * From a list to every site, both lists are empty; from every site to a list, that list
 * is `sites_added`: it is the whole perimeter now.
 */
export function perimeterChange (before: CompanyRecord['perimeter'], after: CompanyRecord['perimeter']): string {
  let added: readonly string[] = []
  let removed: readonly string[] = []
  if (after !== 'all') {
    const was = new Set(before === 'all' ? [] : before)
    const now = new Set(after)
    added = after.filter(s => !was.has(s))
    removed = before === 'all' ? [] : before.filter(s => !now.has(s))
  }
  return `"sites_added":${JSON.stringify(added)},"sites_removed":${JSON.stringify(removed)},"all_sites":${after === 'all'}`
}

function samePerimeter (a: CompanyRecord['perimeter'], b: CompanyRecord['perimeter']): boolean {
  if (a === 'all' || b === 'all') return a === b
  return a.length === b.length && a.every((s, i) => s === b[i])
}
