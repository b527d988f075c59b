/**
 * Withdrawn instructions (DECISIONS.md "Tenure: who holds a site, and when"): a site
 * leaving a company's perimeter at t, or the operator's `epx instructions withdraw`,
 * marks that company's instructions of the days not over `withdrawn` at t, and the
 * effective index of each (site, day) is recomputed among the holder's instructions
 * that are not withdrawn: its latest emitted_at, or none.
 *
 * Each withdrawal is also logged under an increasing seq, replicated like every
 * sub-database: what a running instance reads to hand its solver, at its next cycle,
 * what is in force after t, whoever wrote it (the CLI in another process on LMDB,
 * another instance on PostgreSQL).
 * @module
 */
import type { Store } from './open-store.ts'
import type { StoreDb } from './guarded-db.ts'
import { decodeInstructionHead, supersedes, type EmittedAt } from '../contract/instruction.ts'
import { readUtcInstant } from '../contract/instants.ts'
import { instructionIdPrefix } from '../contract/ids.ts'
import { decodeState, encodeState, entryOf, instructionTree, recordKey, stateKey } from './instruction-tree.ts'
import { openAudit, type Audit, type AuditActor } from './audit.ts'
import { openTenure } from './tenure.ts'
import { openInForce, type InForce } from './in-force.ts'
import { parisDateOf } from '../contract/paris-day.ts'
import { instructionStatusFields, openEvents } from './events.ts'

export const WITHDRAWALS_DB = 'withdrawals'
const SEQ = 'seq'

/** Why: the site left the company's perimeter, or the operator withdrew them. */
export type WithdrawalReason = 'site-left-perimeter' | 'withdrawn'

/** One instruction withdrawn. */
export interface Withdrawal {
  readonly seq: number
  readonly instructionId: string
  readonly siteId: string
  readonly targetDate: string
  readonly companyId: string
  /** ISO 8601 UTC: from when it is withdrawn. */
  readonly at: string
  readonly reason: WithdrawalReason
}

/** Which instructions to withdraw, inside the caller's `writeDurable`. */
export interface WithdrawalRequest {
  /** The first target date concerned (days before it are over, or not asked for). */
  readonly fromDate: string
  /** A cheap test of a site first (its instructions are read only if it passes). */
  readonly site: (siteId: string) => boolean
  /** Whether this company's instructions for this site are withdrawn. */
  readonly of: (siteId: string, companyId: string) => boolean
  /** Who holds the site afterwards: the effective instruction is chosen among its own. */
  readonly holderAfter: (siteId: string) => string | undefined
  readonly reason: WithdrawalReason
  readonly atMs: number
}

/** Keys: `seq` → a `Withdrawal`, and `'seq'` → the last seq given. */
export interface Withdrawals {
  /** Inside a write: withdraws what `req` names and recomputes the effective index; what was withdrawn. */
  withdrawSync(req: WithdrawalRequest): Withdrawal[]
  /** The last seq logged (0: none). */
  lastSeq(): number
  /** Withdrawals logged after `seq`, in order. */
  since(seq: number): Withdrawal[]
}

/** The effective index's entry (store/instructions.ts). */
interface EffectiveRef extends EmittedAt {
  readonly instructionId: string
  /** Its day has a timeline (store/in-force.ts); absent on days stored before it. */
  readonly inForce?: 1
}

interface Found {
  readonly instructionId: string
  readonly siteId: string
  readonly targetDate: string
  readonly companyId: string
  readonly emitted: EmittedAt
  status?: string
}

export function openWithdrawals (store: Store): Withdrawals {
  const tree = instructionTree(store)
  const effective = store.db<EffectiveRef>('instruction-effective')
  const log = store.db<Withdrawal>(WITHDRAWALS_DB)
  // A counter of its own, not the last key: retention removes old entries, and a seq
  // given again would be one a running instance has already read past.
  const counter = store.db<number>(WITHDRAWALS_DB)
  const lastSeq = (): number => counter.get(SEQ) ?? 0
  const inForce = openInForce(store)
  const events = openEvents(store)

  return {
    withdrawSync (req) {
      const found = instructionsOf(tree, req)
      const at = new Date(req.atMs).toISOString()
      const withdrawn: Found[] = []
      for (const f of found) {
        if (f.status === 'withdrawn' || !req.of(f.siteId, f.companyId)) continue
        withdrawn.push(f)
        f.status = 'withdrawn'
      }
      let seq = lastSeq()
      const out: Withdrawal[] = []
      for (const f of withdrawn) {
        const w: Withdrawal = { seq: ++seq, instructionId: f.instructionId, siteId: f.siteId, targetDate: f.targetDate, companyId: f.companyId, at, reason: req.reason }
        markWithdrawn(tree, log, w)
        out.push(w)
      }
      if (out.length) counter.putSync(SEQ, seq)
      // DECISIONS.md "Events for BSPs": the company whose instruction it was is told, in this write.
      events.appendSync(out.map(w => ({
        companyId: w.companyId, type: 'instruction.statut',
        fields: instructionStatusFields(w.instructionId, w.siteId, w.targetDate, 'withdrawn', `,"reason":"${w.reason}"`),
      })), req.atMs)
      const days = recomputeEffective(tree, effective, inForce, found, withdrawn, req.holderAfter, at)
      for (const { siteId, targetDate, best, gone } of days.values()) {
        const next = best && { instructionId: best.instructionId, companyId: best.companyId, ...best.emitted }
        inForce.recordWithdrawn(targetDate, siteId, req.atMs, gone.map(g => ({ instructionId: g.instructionId, companyId: g.companyId })), req.reason, next)
      }
      return out
    },
    lastSeq,
    since (seq) {
      const out: Withdrawal[] = []
      for (const { key, value } of log.getRange({ start: seq + 1 })) if (typeof key === 'number') out.push(value)
      return out
    },
  }
}

/**
 * The one place an instruction becomes `withdrawn`: its status, and the log a running
 * instance reads. The in-force timeline (DECISIONS.md "In force, quarter-hour by
 * quarter-hour") records its `withdrawn` entry here too, in the same write.
 */
export function markWithdrawn (tree: StoreDb<Uint8Array>, log: StoreDb<Withdrawal>, w: Withdrawal): void {
  tree.putSync(stateKey(w.instructionId, w.siteId), encodeState({ status: 'withdrawn', at: w.at, reason: w.reason }))
  log.putSync(w.seq, w)
}

/** The withdrawal log as retention sees it: the entries of days before a date, and their removal (inside a write). */
export function withdrawalLog (store: Store): { before(date: string): number[]; remove(seqs: readonly number[]): void } {
  const log = store.db<Withdrawal>(WITHDRAWALS_DB)
  return {
    before (date) {
      const out: number[] = []
      for (const { key, value } of log.getRange()) if (typeof key === 'number' && value.targetDate < date) out.push(key)
      return out
    },
    remove (seqs) { for (const s of seqs) log.removeSync(s) },
  }
}

/** The instructions of `req.fromDate` and later days of the sites `req.site` passes, with their status. */
function instructionsOf (tree: StoreDb<Uint8Array>, req: WithdrawalRequest): Found[] {
  const out: Found[] = []
  let last: Found | undefined
  for (const { key, value } of tree.getRange({ start: [instructionIdPrefix(req.fromDate)] })) {
    const entry = entryOf(key)
    const [instructionId, siteId] = key as [string, string]
    if (entry === 'record') {
      last = undefined
      if (!req.site(siteId)) continue
      const { head } = decodeInstructionHead(value)
      const at = readUtcInstant(head.emittedAt)
      if (typeof at === 'string') continue
      last = { instructionId, siteId, targetDate: head.targetDate, companyId: head.companyId, emitted: { emittedAtMs: at.ms, emittedAtNanos: at.nanos } }
      out.push(last)
    } else if (entry === 'state' && last?.instructionId === instructionId && last.siteId === siteId) {
      last.status = decodeState(value).status
    }
  }
  return out
}

/**
 * Each (site, day) that lost an instruction: its effective instruction becomes the
 * holder's latest one not withdrawn, or none. One that was superseded by another
 * company's is `received` again: the solver is handed it (enqueue.ts, `handWithdrawn`).
 */
function recomputeEffective (tree: StoreDb<Uint8Array>, effective: StoreDb<EffectiveRef>, inForce: Pick<InForce, 'backfillSync'>, found: readonly Found[], withdrawn: readonly Found[],
  holderAfter: (siteId: string) => string | undefined, at: string): Map<string, ChangedDay> {
  const days = new Map<string, ChangedDay>()
  for (const w of withdrawn) {
    const key = `${w.targetDate}/${w.siteId}`
    const day = days.get(key) ?? { siteId: w.siteId, targetDate: w.targetDate, gone: [] }
    day.gone.push(w)
    days.set(key, day)
  }
  for (const f of found) {
    const day = days.get(`${f.targetDate}/${f.siteId}`)
    if (!day || f.status === 'withdrawn' || f.companyId !== holderAfter(f.siteId)) continue
    if (!day.best || supersedes(f.emitted, day.best.emitted)) day.best = f
  }
  for (const { siteId, targetDate, best } of days.values()) {
    const current = effective.get([targetDate, siteId])
    // A day stored before the timeline derives it first, from its instructions as they were.
    if (current && !current.inForce) inForce.backfillSync(targetDate, siteId)
    if (!best) {
      if (current) effective.removeSync([targetDate, siteId])
      continue
    }
    if (current?.instructionId === best.instructionId) continue
    const { emittedAtMs, emittedAtNanos } = best.emitted
    effective.putSync([targetDate, siteId], emittedAtNanos
      ? { instructionId: best.instructionId, emittedAtMs, emittedAtNanos, inForce: 1 }
      : { instructionId: best.instructionId, emittedAtMs, inForce: 1 })
    if (best.status === 'superseded' && tree.get(recordKey(best.instructionId, siteId))) {
      tree.putSync(stateKey(best.instructionId, siteId), encodeState({ status: 'received', at }))
    }
  }
  return days
}

/** A (site, day) that lost instructions: what it lost, and what is in force after. */
interface ChangedDay {
  readonly siteId: string
  readonly targetDate: string
  readonly gone: Found[]
  best?: Found
}

/** One audit record per company and reason whose instructions a change withdrew, in its write. */
export function auditWithdrawals (audit: Pick<Audit, 'appendSync'>, withdrawn: readonly Withdrawal[], actor: AuditActor, atMs: number): void {
  const byCompany = new Map<string, Withdrawal[]>()
  for (const w of withdrawn) {
    const key = `${w.companyId}\n${w.reason}`
    byCompany.set(key, [...byCompany.get(key) ?? [], w])
  }
  for (const ws of byCompany.values()) {
    const { companyId, reason } = ws[0]!
    audit.appendSync({
      actor, action: 'instruction.withdrawn', subject: companyId, outcome: 'ok',
      details: { companyId, reason, count: ws.length, sites: [...new Set(ws.map(w => w.siteId))], instructions: ws.slice(0, 20).map(w => `${w.instructionId} ${w.siteId}`) },
    }, atMs)
  }
}

/** What `epx instructions withdraw` asks: a company's instructions, of some sites, from a day. */
export interface OperatorWithdrawal {
  readonly companyId: string
  /** Unset or empty: every site. */
  readonly siteIds?: readonly string[]
  /** The first target date (default, and at the earliest: today in Europe/Paris). */
  readonly fromDate?: string
  readonly actor: AuditActor
  readonly atMs: number
}

/**
 * The operator's withdrawal (DECISIONS.md "Tenure: who holds a site, and when"): the
 * company's instructions of the days not over (from `fromDate`) are `withdrawn` at
 * `atMs`, the effective index of their sites and days is recomputed among their holders'
 * instructions, and the audit says so, in one durable write. Resolves to what was withdrawn.
 */
export function withdrawInstructions (store: Store, req: OperatorWithdrawal): Promise<Withdrawal[]> {
  const withdrawals = openWithdrawals(store)
  const tenure = openTenure(store)
  const audit = openAudit(store)
  const today = parisDateOf(new Date(req.atMs))
  const fromDate = req.fromDate !== undefined && req.fromDate > today ? req.fromDate : today
  const sites = req.siteIds?.length ? new Set(req.siteIds) : undefined
  return store.writeDurable(() => {
    const holders = tenure.holdersNow()
    const out = withdrawals.withdrawSync({
      fromDate,
      site: siteId => !sites || sites.has(siteId),
      of: (_, companyId) => companyId === req.companyId,
      holderAfter: siteId => holders.holderOf(siteId),
      reason: 'withdrawn',
      atMs: req.atMs,
    })
    auditWithdrawals(audit, out, req.actor, req.atMs)
    if (!out.length) {
      audit.appendSync({ actor: req.actor, action: 'instruction.withdrawn', subject: req.companyId, outcome: 'nothing to withdraw', details: { companyId: req.companyId, reason: 'withdrawn', count: 0, fromDate, ...(sites ? { sites: [...sites] } : {}) } }, req.atMs)
    }
    return out
  })
}
