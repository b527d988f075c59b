/**
 * What the replica property test (test/store/postgres/replica-property.test.ts) expects of
 * the store: per record, the values it may hold. A write that resolved is there; one that
 * threw is not; one refused with NO_STORE may or may not be (its commit may have landed
 * all the same), so the record may hold either until the database says which.
 * @module
 */

/** A put (`w`: the write's number, in the value) or a removal (`w` null) of one record. */
export interface RecordOp {
  readonly db: 'things' | 'metering'
  readonly key: string
  readonly w: number | null
  /** Filler length: records of several sizes. */
  readonly pad: number
}

/** The value a put writes: an object for a msgpack sub-database, bytes for a binary one. */
export function recordValue (op: RecordOp): unknown {
  if (op.db === 'things') return { w: op.w, key: op.key, pad: 'x'.repeat(op.pad) }
  const b = Buffer.alloc(4 + op.pad, op.w! % 251)
  b.writeUInt32BE(op.w!, 0)
  return b
}

/** The write number a stored value carries (what `recordValue` put), or NaN for a value no write made. */
export function writeOf (db: RecordOp['db'], value: unknown): number {
  if (db === 'things') {
    const v = value as { w?: unknown; key?: unknown; pad?: unknown }
    return typeof v?.w === 'number' && typeof v.pad === 'string' && v.pad === 'x'.repeat(v.pad.length) ? v.w : NaN
  }
  const b = value as Buffer
  if (!Buffer.isBuffer(b) || b.length < 4) return NaN
  const w = b.readUInt32BE(0)
  return b.subarray(4).every(x => x === w % 251) ? w : NaN
}

/** A job's outcome: resolved (landed), threw in its fn (must leave nothing), refused NO_STORE (either). */
export type Outcome = 'landed' | 'threw' | 'maybe'

const ABSENT = 0
export const recordId = (db: string, key: string): string => `${db}/${key}`

export class Model {
  /** Record → the write numbers it may hold (ABSENT: none). Records never written are absent. */
  private readonly may = new Map<string, Set<number>>()

  /** Jobs that ran at the same time (in any order): what each record may hold after them. */
  settleGroup (jobs: ReadonlyArray<{ readonly ops: readonly RecordOp[]; readonly outcome: Outcome }>): void {
    const landed = new Map<string, Set<number>>()
    const maybe = new Map<string, Set<number>>()
    for (const { ops, outcome } of jobs) {
      if (outcome === 'threw') continue
      // Within a job the last write of a record wins.
      const last = new Map<string, number>()
      for (const op of ops) last.set(recordId(op.db, op.key), op.w ?? ABSENT)
      const into = outcome === 'landed' ? landed : maybe
      for (const [id, w] of last) { let s = into.get(id); if (!s) into.set(id, s = new Set()); s.add(w) }
    }
    for (const id of new Set([...landed.keys(), ...maybe.keys()])) {
      const next = new Set<number>(landed.get(id) ?? this.possible(id))
      for (const w of maybe.get(id) ?? []) next.add(w)
      this.may.set(id, next)
    }
  }

  possible (id: string): Set<number> {
    return this.may.get(id) ?? new Set([ABSENT])
  }

  /** Whether some record is not known for sure. */
  uncertain (): number {
    let n = 0
    for (const s of this.may.values()) if (s.size > 1) n++
    return n
  }

  /**
   * `actual` (record → write number, the records present) against what may be: the
   * records that hold what no write could have left them, described.
   */
  mismatches (actual: ReadonlyMap<string, number>): string[] {
    const out: string[] = []
    for (const id of new Set([...this.may.keys(), ...actual.keys()])) {
      const w = actual.get(id) ?? ABSENT
      const may = this.possible(id)
      if (!may.has(w)) out.push(`${id}: holds ${w === ABSENT ? 'nothing' : `write ${w}`}, expected ${[...may].map(x => x === ABSENT ? 'nothing' : `write ${x}`).join(' or ')}`)
    }
    return out
  }

  /** The database has said which: each record holds what `actual` says, for sure. */
  resolve (actual: ReadonlyMap<string, number>): void {
    for (const id of new Set([...this.may.keys(), ...actual.keys()])) this.may.set(id, new Set([actual.get(id) ?? ABSENT]))
  }

  /** What the records surely hold (record → write number), when nothing is uncertain. */
  sure (): Map<string, number> {
    const out = new Map<string, number>()
    for (const [id, s] of this.may) { const [w] = s; if (s.size === 1 && w !== ABSENT) out.set(id, w!) }
    return out
  }
}
