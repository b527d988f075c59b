/**
 * What was in force, per (site, day) (DECISIONS.md "In force, quarter-hour by quarter-hour"):
 * each change of the instruction in force with its instant and cause, recorded as it
 * happens, in the transaction that makes it: a save that makes an instruction the
 * effective one (`received`, ending the one it supersedes), a withdrawal (`withdrawn`), and
 * the solver cycle that first applied an instruction (`applied`). A quarter-hour is
 * governed by the instruction in force at its start (`apply/realisation.ts`); the status
 * read shows each instruction's spans (`apply/programme-status.ts`).
 *
 * One record per change, keyed `[target_date, site_id, at (ms), cause, instruction_id]`:
 * a save adds at most one put per site (none when its instruction is superseded on
 * arrival or re-sent), and a day's timeline is one short key range.
 * @module
 */
import type { Key } from 'lmdb'
import type { Store } from './open-store.ts'
import type { StoreDb } from './guarded-db.ts'
import { supersedes, decodeInstructionHead } from '../contract/instruction.ts'
import { instructionIdPrefix } from '../contract/ids.ts'
import { readUtcInstant } from '../contract/instants.ts'
import { decodeState, entryOf, instructionTree } from './instruction-tree.ts'

export const IN_FORCE_DB = 'in-force'

/** Why a site and day's instruction in force changed, or what befell it. */
export type InForceCause = 'received' | 'superseded' | 'withdrawn' | 'applied'

/** Why an instruction stopped being in force, or never governs: the status read's `not_in_force_reason`. */
export type WithdrawalReason = 'withdrawn' | 'site-left-perimeter'

/** An instruction as the timeline names it. */
export interface InForceRef {
  readonly instructionId: string
  readonly companyId: string
}

/** One change of a timeline, as readers get it. */
export interface InForceChange extends InForceRef {
  readonly atMs: number
  readonly cause: InForceCause
  /** `applied`: the solver cycle that first applied it. */
  readonly cycle?: number
  /** `withdrawn`: why. */
  readonly reason?: WithdrawalReason
}

/** When an instruction was in force: `[fromMs, untilMs)`, `untilMs` absent while it is. */
export interface InForceSpan extends InForceRef {
  readonly fromMs: number
  readonly untilMs?: number
  /** Why it ended. */
  readonly endedBy?: 'superseded' | WithdrawalReason
}

/** A record of the sub-database (msgpack). */
type Stored =
  | { readonly cause: 'received'; readonly companyId: string; readonly emittedAtMs: number; readonly emittedAtNanos?: number }
  | { readonly cause: 'applied'; readonly cycle: number }
  | { readonly cause: 'withdrawn'; readonly companyId: string; readonly reason: WithdrawalReason; readonly next?: InForceRef & { readonly emittedAtMs: number; readonly emittedAtNanos?: number } }

/** A stored change: its instant and instruction from its key. */
type Row = { atMs: number; instructionId: string; value: Stored }

/** Replay order of the changes of one instant: a withdrawal, then receipts by emitted_at, then the cycle. */
const RANK: Record<Stored['cause'], number> = { withdrawn: 0, received: 1, applied: 2 }

export interface InForce {
  /** The changes of a site and day, oldest first; a `received` that supersedes is preceded by the `superseded` it causes. */
  timelineOf(targetDate: string, siteId: string): InForceChange[]
  /** Each instruction's spans in force over a site and day, in order. */
  spansOf(targetDate: string, siteId: string): InForceSpan[]
  /** The instruction in force at `atMs` (received at or before it, not withdrawn since), or undefined. */
  inForceAt(targetDate: string, siteId: string, atMs: number): InForceRef | undefined
  /**
   * Inside a save's write: `instructionId` became the effective one of the site and day
   * at `atMs` (the one it supersedes ends there).
   */
  putReceivedSync(targetDate: string, siteId: string, atMs: number, ref: { readonly instructionId: string; readonly emittedAtMs: number; readonly emittedAtNanos?: number }, companyId: string): void
  /**
   * Inside `markApplied`'s write: a solver cycle applied the instruction. One put, no read:
   * a later cycle (a restart queued it again) is stored too, and readers tell the first.
   */
  putAppliedSync(targetDate: string, siteId: string, atMs: number, instructionId: string, cycle: number): void
  /**
   * Inside a save's write, before it supersedes an instruction made effective before the
   * timeline existed (its effective ref has no `inForce` mark): the site and day's derived
   * timeline is written first, so what governed its earlier quarter-hours is not lost.
   */
  backfillSync(targetDate: string, siteId: string): void
  /**
   * Inside the withdrawal's write (DECISIONS.md "Tenure"): each of `withdrawn` stops being
   * eligible at `atMs`; `next` is what is in force after it (the new holder's latest
   * instruction), none when absent. A withdrawn instruction that was not in force is
   * recorded too, so the status read can say why it never will be.
   */
  recordWithdrawn(targetDate: string, siteId: string, atMs: number, withdrawn: readonly InForceRef[], reason: WithdrawalReason,
    next?: InForceRef & { readonly emittedAtMs: number; readonly emittedAtNanos?: number }): void
  /** Removes the timelines of days before `beforeDate`, inside the caller's write (retention, with the instructions). */
  pruneSync(beforeDate: string): number
}

export function openInForce (store: Store): InForce {
  const db = store.db<Stored>(IN_FORCE_DB)
  const tree = instructionTree(store)
  const effective = store.db<{ instructionId: string; inForce?: 1 }>('instruction-effective')

  const storedRows = (targetDate: string, siteId: string): Row[] => {
    const rows: Row[] = []
    for (const { key, value } of db.getRange(dayRange(targetDate, siteId))) {
      const k = key as [string, string, number, string, string]
      rows.push({ atMs: k[2], instructionId: k[4], value })
    }
    return rows
  }

  const timelineOf = (targetDate: string, siteId: string): InForceChange[] => {
    const rows = storedRows(targetDate, siteId)
    // Only cycles (or nothing) stored: a day from before the timeline, derived, with the cycles seen since.
    if (!rows.some(r => r.value.cause !== 'applied')) rows.push(...derivedRows(tree, effective, targetDate, siteId))
    return rows.length ? replay(rows) : []
  }

  return {
    timelineOf,
    spansOf: (targetDate, siteId) => spansOfTimeline(timelineOf(targetDate, siteId)),
    inForceAt (targetDate, siteId, atMs) {
      let current: InForceRef | undefined
      for (const c of timelineOf(targetDate, siteId)) {
        if (c.atMs > atMs) break
        if (c.cause === 'received') current = { instructionId: c.instructionId, companyId: c.companyId }
        else if ((c.cause === 'superseded' || c.cause === 'withdrawn') && current?.instructionId === c.instructionId) current = undefined
      }
      return current
    },
    putReceivedSync (targetDate, siteId, atMs, ref, companyId) {
      db.putSync(keyOf(targetDate, siteId, atMs, 'received', ref.instructionId), {
        cause: 'received', companyId, emittedAtMs: ref.emittedAtMs, ...(ref.emittedAtNanos ? { emittedAtNanos: ref.emittedAtNanos } : {}),
      })
    },
    putAppliedSync (targetDate, siteId, atMs, instructionId, cycle) {
      db.putSync(keyOf(targetDate, siteId, atMs, 'applied', instructionId), { cause: 'applied', cycle })
    },
    backfillSync (targetDate, siteId) {
      if (storedRows(targetDate, siteId).some(r => r.value.cause !== 'applied')) return
      for (const row of derivedRows(tree, effective, targetDate, siteId)) db.putSync(keyOf(targetDate, siteId, row.atMs, row.value.cause, row.instructionId), row.value)
    },
    recordWithdrawn (targetDate, siteId, atMs, withdrawn, reason, next) {
      for (const w of withdrawn) {
        db.putSync(keyOf(targetDate, siteId, atMs, 'withdrawn', w.instructionId), { cause: 'withdrawn', companyId: w.companyId, reason, ...(next ? { next } : {}) })
      }
    },
    pruneSync (beforeDate) {
      const keys = [...db.getKeys({ start: [''], end: [beforeDate] })]
      for (const k of keys) db.removeSync(k)
      return keys.length
    },
  }
}

const keyOf = (targetDate: string, siteId: string, atMs: number, cause: Stored['cause'], instructionId: string): Key =>
  [targetDate, siteId, atMs, cause, instructionId]

/** Every key of a site and day: `[day, site, …]` sorts after `[day, site]` and before `[day, site + '\0']`. */
function dayRange (targetDate: string, siteId: string) {
  return { start: [targetDate, siteId], end: [targetDate, siteId + '\u0000'] }
}

/**
 * The stored changes, replayed in order: a receipt makes its instruction the one in force
 * (the one before is superseded there); a withdrawal of the one in force hands over to its
 * `next`; the first cycle that applied an instruction is told as it is. Within one
 * millisecond, receipts replay by emitted_at, as the effective index decided them.
 */
function replay (rows: Row[]): InForceChange[] {
  rows.sort((a, b) => a.atMs - b.atMs || RANK[a.value.cause] - RANK[b.value.cause] || emittedOrder(a.value, b.value))
  const out: InForceChange[] = []
  const companyOf = new Map<string, string>()
  const applied = new Set<string>()
  let current: (InForceRef & { emittedAtMs: number; emittedAtNanos?: number }) | undefined
  for (const { atMs, instructionId, value } of rows) {
    if (value.cause === 'received') {
      companyOf.set(instructionId, value.companyId)
      if (current && current.instructionId !== instructionId) out.push({ atMs, cause: 'superseded', instructionId: current.instructionId, companyId: current.companyId })
      current = { instructionId, companyId: value.companyId, emittedAtMs: value.emittedAtMs, ...(value.emittedAtNanos ? { emittedAtNanos: value.emittedAtNanos } : {}) }
      out.push({ atMs, cause: 'received', instructionId, companyId: value.companyId })
    } else if (value.cause === 'withdrawn') {
      out.push({ atMs, cause: 'withdrawn', instructionId, companyId: value.companyId, reason: value.reason })
      if (current?.instructionId === instructionId) {
        current = value.next
        if (value.next) out.push({ atMs, cause: 'received', instructionId: value.next.instructionId, companyId: value.next.companyId })
      }
    } else if (!applied.has(instructionId)) {
      // The first cycle that applied it; a later one (after a restart) changes nothing.
      applied.add(instructionId)
      out.push({ atMs, cause: 'applied', instructionId, companyId: companyOf.get(instructionId) ?? '', cycle: value.cycle })
    }
  }
  return out
}

function emittedOrder (a: Stored, b: Stored): number {
  if (a.cause !== 'received' || b.cause !== 'received') return 0
  return supersedes(a, b) ? 1 : supersedes(b, a) ? -1 : 0
}

/** The spans of a timeline, per instruction in the order they began. */
export function spansOfTimeline (timeline: readonly InForceChange[]): InForceSpan[] {
  const spans: InForceSpan[] = []
  let open: { index: number; ref: InForceRef; fromMs: number } | undefined
  const close = (atMs: number, endedBy: InForceSpan['endedBy']) => {
    if (!open) return
    spans[open.index] = { instructionId: open.ref.instructionId, companyId: open.ref.companyId, fromMs: open.fromMs, untilMs: atMs, ...(endedBy ? { endedBy } : {}) }
    open = undefined
  }
  for (const c of timeline) {
    if (c.cause === 'received') {
      if (open?.ref.instructionId === c.instructionId) continue
      close(c.atMs, 'superseded')
      open = { index: spans.length, ref: c, fromMs: c.atMs }
      spans.push({ instructionId: c.instructionId, companyId: c.companyId, fromMs: c.atMs })
    } else if (c.cause === 'superseded' && open?.ref.instructionId === c.instructionId) {
      close(c.atMs, 'superseded')
    } else if (c.cause === 'withdrawn' && open?.ref.instructionId === c.instructionId) {
      close(c.atMs, c.reason ?? 'withdrawn')
    }
  }
  return spans
}

/**
 * The timeline of a site and day whose instructions were stored before epx kept one:
 * derived from what each instruction kept (its received_at, emitted_at and status).
 * Replayed in order of receipt, each instruction that outranked the one then in force
 * (a later emitted_at) took its place when it was received; the instruction with status
 * `applied` tells its cycle at the instant it was marked. What this cannot know (a cycle
 * that applied an instruction later superseded) is left out. It reads the day's
 * instructions, so it runs only when the effective instruction was made so without the
 * timeline (its ref has no `inForce` mark) and nothing but cycles was recorded since: days
 * stored before the timeline, which retention removes in time. Once a save changes such a
 * day, what is derived is written (`backfillSync`).
 */
function derivedRows (tree: StoreDb<Uint8Array>, effective: StoreDb<{ instructionId: string; inForce?: 1 }>, targetDate: string, siteId: string): Row[] {
  const ref = effective.get([targetDate, siteId])
  // Made effective with its timeline (or nothing effective): nothing to derive.
  if (!ref || ref.inForce) return []
  const prefix = instructionIdPrefix(targetDate)
  const found: Array<{ instructionId: string; companyId: string; receivedMs: number; emittedAtMs: number; emittedAtNanos: number; applied?: { atMs: number; cycle: number } }> = []
  for (const { key, value } of tree.getRange({ start: [prefix], end: [prefix + '~'] })) {
    const k = key as [string, string]
    if (k[1] !== siteId) continue
    const entry = entryOf(key)
    if (entry === 'record') {
      const { head } = decodeInstructionHead(value)
      const emitted = readUtcInstant(head.emittedAt)
      if (typeof emitted === 'string') continue
      found.push({ instructionId: k[0], companyId: head.companyId, receivedMs: Date.parse(head.receivedAt), emittedAtMs: emitted.ms, emittedAtNanos: emitted.nanos })
    } else if (entry === 'state') {
      const last = found.at(-1)
      const state = decodeState(value)
      if (last?.instructionId === k[0] && state.status === 'applied' && state.cycle !== undefined) last.applied = { atMs: Date.parse(state.at), cycle: state.cycle }
    }
  }
  found.sort((a, b) => a.receivedMs - b.receivedMs)
  const rows: Row[] = []
  let current: (typeof found)[number] | undefined
  for (const f of found) {
    if (current && !supersedes(f, current)) continue
    current = f
    rows.push({ atMs: f.receivedMs, instructionId: f.instructionId, value: { cause: 'received', companyId: f.companyId, emittedAtMs: f.emittedAtMs, emittedAtNanos: f.emittedAtNanos } })
  }
  for (const f of found) if (f.applied) rows.push({ atMs: f.applied.atMs, instructionId: f.instructionId, value: { cause: 'applied', cycle: f.applied.cycle } })
  return rows
}
