/**
 * Tenure (DECISIONS.md "Tenure: who holds a site, and when"): every change of a
 * company's perimeter or status, with its instant and its actor, written by
 * `companies.ts` in the write that changes the record. From that history: who held a
 * site at an instant, and the spans a company held it.
 *
 * The holder of site S at t is the active company whose perimeter held S at t (one BSP
 * per site: at most one). A suspended holder keeps its tenure (suspension stops its
 * calls, not the solver's plan) until another company is given S or its perimeter drops S.
 *
 * Keys: `[company_id, seq]` → a `TenureChange`, and `'seq'` → the last seq written. A
 * company stored before the history existed has, until its first change is written, an
 * entry made from its record: its `createdAt` and its current perimeter and status.
 * @module
 */
import type { Store } from './open-store.ts'
import type { AuditActor } from './audit.ts'
import type { CompanyRecord } from './companies.ts'
import { openGeneration } from './generation.ts'

export const TENURE_DB = 'tenure'
const SEQ = 'seq'

/** What changed: the company's first entry, a new perimeter, or a status. */
export type TenureKind = 'added' | 'perimeter' | 'suspended' | 'resumed' | 'recorded'

/** One change of a company's perimeter or status: the state it left the company in. */
export interface TenureChange {
  readonly companyId: string
  /** Order of writing; 0 for the entry made from a record stored before the history. */
  readonly seq: number
  /** ISO 8601 UTC. */
  readonly at: string
  readonly atMs: number
  readonly actor: AuditActor
  /** `recorded`: made from a record stored before the history existed (its `createdAt`). */
  readonly kind: TenureKind
  readonly status: CompanyRecord['status']
  readonly perimeter: CompanyRecord['perimeter']
}

export interface Tenure {
  /** The company's changes, oldest first (empty: no such company). */
  historyOf(companyId: string): TenureChange[]
  /** The company that held `siteId` at `atMs` (none: undefined). */
  holderAt(siteId: string, atMs: number): string | undefined
  /** The spans, clipped to [fromMs, untilMs), during which `companyId` held `siteId`. */
  heldSpans(companyId: string, siteId: string, fromMs: number, untilMs: number): Array<{ fromMs: number; untilMs: number }>
  /** Every holder of `siteId` in [fromMs, untilMs), in time order, each span clipped to it: one replay, what a day's reads need. */
  holdersDuring(siteId: string, fromMs: number, untilMs: number): HolderSpan[]
}

/** A company's tenure of a site: [fromMs, untilMs). */
export interface HolderSpan {
  readonly companyId: string
  readonly fromMs: number
  readonly untilMs: number
}

/** What `companies.ts` writes with a record: inside its `writeDurable`. */
export interface TenureWriter {
  /**
   * Before the record is put: appends the change from `before` (undefined: a new company) to `after`, and the
   * entry made from `before` if the company had none yet. Returns the holders of every
   * site just before and just after it, for the withdrawals it causes.
   */
  recordSync(before: CompanyRecord | undefined, after: CompanyRecord, actor: AuditActor, atMs: number): { before: Holders; after: Holders }
  /** The holders now (inside or outside a write). */
  holdersNow(): Holders
}

/** Who holds each site at one instant. */
export interface Holders {
  holderOf(siteId: string): string | undefined
}

export function openTenure (store: Store): Tenure & TenureWriter {
  const db = store.db<TenureChange | number>(TENURE_DB)
  const companiesDb = store.db<CompanyRecord>('companies')
  const generation = openGeneration(store)
  let cached: { generation: number; changes: TenureChange[] } | undefined

  const stored = (companyId?: string): TenureChange[] => {
    const range = companyId === undefined ? {} : { start: [companyId], end: [companyId, Number.MAX_SAFE_INTEGER] }
    const out: TenureChange[] = []
    for (const { key, value } of db.getRange(range)) if (Array.isArray(key)) out.push(value as TenureChange)
    return out
  }
  /** Every change, in time order, with an entry made from each record the history has none of. */
  const allChanges = (): TenureChange[] => {
    const g = generation.read()
    if (cached?.generation === g) return cached.changes
    const changes = stored()
    const known = new Set(changes.map(c => c.companyId))
    for (const { key, value } of companiesDb.getRange()) {
      if (typeof key === 'string' && !known.has(key)) changes.push(fromRecord(value))
    }
    changes.sort(inTimeOrder)
    cached = { generation: g, changes }
    return changes
  }

  return {
    historyOf (companyId) {
      const own = stored(companyId)
      if (own.length) return own
      const record = companiesDb.get(companyId)
      return record ? [fromRecord(record)] : []
    },
    holderAt: (siteId, atMs) => replay(allChanges(), siteId, atMs, undefined).holder,
    heldSpans (companyId, siteId, fromMs, untilMs) {
      return holdersDuring(allChanges(), siteId, fromMs, untilMs).filter(h => h.companyId === companyId).map(h => ({ fromMs: h.fromMs, untilMs: h.untilMs }))
    },
    holdersDuring: (siteId, fromMs, untilMs) => holdersDuring(allChanges(), siteId, fromMs, untilMs),
    recordSync (before, after, actor, atMs) {
      const changes = allChanges()
      const holdersBefore = holdersAt(changes, atMs)
      let seq = (db.get(SEQ) as number | undefined) ?? 0
      // The first change of a company stored before the history: its entry from the record goes first.
      if (before && [...db.getKeys({ start: [before.id], end: [before.id, Number.MAX_SAFE_INTEGER], limit: 1 })].length === 0) {
        db.putSync([before.id, 0], fromRecord(before))
      }
      const entry: TenureChange = {
        companyId: after.id, seq: ++seq, at: new Date(atMs).toISOString(), atMs, actor,
        kind: kindOf(before, after), status: after.status, perimeter: after.perimeter,
      }
      db.putSync([after.id, seq], entry)
      db.putSync(SEQ, seq)
      const next = [...changes, entry].sort(inTimeOrder)
      cached = undefined
      return { before: holdersBefore, after: holdersAt(next, atMs) }
    },
    holdersNow: () => holdersAt(allChanges(), Number.MAX_SAFE_INTEGER),
  }
}

function kindOf (before: CompanyRecord | undefined, after: CompanyRecord): TenureKind {
  if (!before) return 'added'
  if (before.status !== after.status) return after.status === 'active' ? 'resumed' : 'suspended'
  return 'perimeter'
}

function fromRecord (c: CompanyRecord): TenureChange {
  const atMs = Date.parse(c.createdAt)
  return {
    companyId: c.id, seq: 0, at: c.createdAt, atMs: Number.isNaN(atMs) ? 0 : atMs,
    actor: { kind: 'host' }, kind: 'recorded', status: c.status, perimeter: c.perimeter,
  }
}

function inTimeOrder (a: TenureChange, b: TenureChange): number {
  return a.atMs - b.atMs || a.seq - b.seq || (a.companyId < b.companyId ? -1 : a.companyId > b.companyId ? 1 : 0)
}

const holds = (c: { perimeter: CompanyRecord['perimeter'] }, siteId: string): boolean =>
  c.perimeter === 'all' || c.perimeter.includes(siteId)

/**
 * The holder of a site after one change, from the one before and every company's state:
 * an active company keeps it, or an active company takes it (the first by id, were two
 * active perimeters to share it, as stored before one BSP per site was the rule), or a
 * suspended holder keeps it while its perimeter does.
 */
function nextHolder (holder: string | undefined, siteId: string, states: ReadonlyMap<string, TenureChange>): string | undefined {
  const held = holder === undefined ? undefined : states.get(holder)
  const keeps = held !== undefined && holds(held, siteId)
  if (keeps && held.status === 'active') return holder
  let first: string | undefined
  for (const [id, s] of states) {
    if (s.status === 'active' && holds(s, siteId) && (first === undefined || id < first)) first = id
  }
  return first ?? (keeps ? holder : undefined)
}

/**
 * Replays the changes up to `untilMs` (inclusive) for one site: its holder then, and each
 * span of a holder ([start, end), the last one ending at `untilMs`) to `span`.
 */
function replay (changes: readonly TenureChange[], siteId: string, untilMs: number, span: ((holder: string, startMs: number, endMs: number) => void) | undefined): { holder: string | undefined } {
  const states = new Map<string, TenureChange>()
  let holder: string | undefined
  let since = -Infinity
  for (const c of changes) {
    if (c.atMs > untilMs) break
    states.set(c.companyId, c)
    const next = nextHolder(holder, siteId, states)
    if (next === holder) continue
    if (holder !== undefined && span) span(holder, since, c.atMs)
    holder = next
    since = c.atMs
  }
  if (holder !== undefined && span) span(holder, since, untilMs)
  return { holder }
}

function holdersDuring (changes: readonly TenureChange[], siteId: string, fromMs: number, untilMs: number): HolderSpan[] {
  const spans: HolderSpan[] = []
  replay(changes, siteId, untilMs, (companyId, startMs, endMs) => {
    const a = Math.max(startMs, fromMs)
    const b = Math.min(endMs, untilMs)
    if (a < b) spans.push({ companyId, fromMs: a, untilMs: b })
  })
  return spans
}

/** Every site's holder at `atMs`, each site replayed when first asked. */
function holdersAt (changes: readonly TenureChange[], atMs: number): Holders {
  const memo = new Map<string, string | undefined>()
  return {
    holderOf (siteId) {
      if (!memo.has(siteId)) memo.set(siteId, replay(changes, siteId, atMs, undefined).holder)
      return memo.get(siteId)
    },
  }
}
