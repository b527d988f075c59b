/**
 * A Programme_Soutirage read straight from its bytes, when it has the shape a BSP's
 * serializer writes: the contract's fields (§2.2) and no other, each once; strings
 * without escapes; numbers not negative; each site's slots contiguous (each starts where
 * the one before it ends), of one length, their instants spelled as this service spells
 * them (`instantText`). The slots go straight to two columns: no object per slot and no
 * string per instant, which is most of what `JSON.parse` makes of a programme
 * (bench/README.md#where-post-1--96-goes-e-against-c).
 *
 * This reader only accepts. Anything else (another field, an escape, a gap, a minus
 * sign, a syntax error) returns undefined, and `check-programme.ts` reads the body the
 * general way, JSON.parse then every rule, which says what is wrong. What it accepts
 * still goes through the schema and the rules of the envelope and the sites
 * (`programme-rules.ts` `scannedSlotsHold` for the slots'), and must come out exactly as
 * the general way would make it: test/apply/scan-programme.test.ts compares the two.
 * @module
 */
import { instantText, spellsQuarter } from '../contract/instant-text.ts'
import { utcInstantMs } from '../contract/instants.ts'
import { QUARTER_HOUR_MS } from '../contract/paris-day.ts'
import type { CheckedSlots, ScannedSlots } from '../contract/programme-rules.ts'

/** A programme read by this reader: what JSON.parse would make of it, its slots in columns, and what the slot rules are judged on. */
export interface ScannedProgramme extends Omit<CheckedSlots, 'emittedAt'>, ScannedSlots {
  /**
   * The envelope and its sites as JSON.parse would make them, but each site's
   * `energie_programmee` empty (when present): its slots are in the columns.
   */
  readonly body: Record<string, unknown>
}

/** Thrown inside the reader for anything it does not accept; never leaves it. */
const DECLINE = Symbol('not the canonical shape')

const QUOTE = 34
const BACKSLASH = 92
const COMMA = 44
const COLON = 58
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93
const DOT = 46
/** `"2026-11-21T23:15:00Z"`: 20 characters between its quotes. */
const INSTANT_LENGTH = 20
/**
 * The fewest bytes a slot takes (`{"debut_utc":"…","fin_utc":"…","energie_kwh":0}`, its
 * instants 20 characters each): the columns' capacity for a body of n bytes.
 */
const MIN_SLOT_BYTES = 85

const ENVELOPE_NAMES = ['schema_version', 'type', 'emitted_by', 'emitted_at', 'target_date', 'slot_duration_secs', 'sites']
const ENVELOPE_KEYS = ENVELOPE_NAMES.map(bytesOf)
const SLOT_DURATION = 5
const SITES = 6
const SITE_NAMES = ['site_id', 'site_name', 'energie_programmee']
const SITE_KEYS = SITE_NAMES.map(bytesOf)
const SLOTS = 2
const SLOT_KEYS = ['debut_utc', 'fin_utc', 'energie_kwh'].map(bytesOf)
const DEBUT = 0
const FIN = 1

function bytesOf (name: string): Buffer {
  return Buffer.from(name, 'latin1')
}

/** 1 to 1e22, each exact: read from their text (`**` may round). */
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`))
const NO_SLOTS: readonly never[] = Object.freeze([])

// The reader's state, module-wide rather than in an object: one read allocates only what
// it returns. Single-threaded per isolate (each worker has its own copy of the module).
const EMPTY = Buffer.alloc(0)
const NO_VIEW = new DataView(new ArrayBuffer(0))
let b: Buffer = EMPTY
let view: DataView = NO_VIEW
let i = 0
let end = 0
const NO_COLUMN = new Float64Array(0)
let starts = NO_COLUMN
let kwh = NO_COLUMN
let n = 0
let slotMs = NaN
let firstStartMs = NaN
let lastEndMs = NaN
let maxKwh = NaN

/** The programme in `bytes`, or undefined when it is not in the shape this reader takes. */
export function scanProgramme (bytes: Uint8Array): ScannedProgramme | undefined {
  b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  i = 0
  end = b.length
  const capacity = Math.floor(end / MIN_SLOT_BYTES) + 1
  // One backing store for both columns, as the rules' (programme-rules.ts `CheckedSlots`).
  const both = new ArrayBuffer(16 * capacity)
  starts = new Float64Array(both, 0, capacity)
  kwh = new Float64Array(both, 8 * capacity, capacity)
  n = 0
  slotMs = firstStartMs = lastEndMs = maxKwh = NaN
  try {
    const body = readEnvelope()
    skipSpace()
    if (i !== end) return undefined
    const slotEnds = Uint32Array.from(siteEnds)
    return {
      body,
      starts: new Float64Array(both, 0, n),
      kwh: new Float64Array(both, 8 * capacity, n),
      slotEnds,
      slotMs,
      firstStartMs,
      lastEndMs,
      maxKwh,
    }
  } catch (err) {
    if (err === DECLINE) return undefined
    throw err
  } finally {
    // Nothing of this body stays reachable from the module once read.
    b = EMPTY
    view = NO_VIEW
    starts = kwh = NO_COLUMN
    siteEnds.length = 0
  }
}

function decline (): never {
  throw DECLINE
}

function skipSpace (): void {
  while (i < end) {
    const c = b[i]!
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return
    i++
  }
}

/** The next byte after spaces, which must be `c`. */
function expect (c: number): void {
  skipSpace()
  if (b[i] !== c) decline()
  i++
}

/**
 * `{ key: value, … }`, each key one of `names` at most once: `value(k, into)` reads key k's
 * value, the cursor on its first byte. `value` is a function of this module, not a closure
 * made per object (bench/README.md#closures-made-per-request).
 */
function readObject<T> (names: readonly Buffer[], value: (k: number, into: T) => void, into: T): void {
  expect(OPEN_OBJECT)
  skipSpace()
  if (b[i] === CLOSE_OBJECT) { i++; return }
  let seen = 0
  for (;;) {
    const k = readKey(names)
    if ((seen & (1 << k)) !== 0) decline()   // JSON.parse keeps the last; the rules would see that one
    seen |= 1 << k
    expect(COLON)
    skipSpace()
    value(k, into)
    if (atEnd(CLOSE_OBJECT)) return
    skipSpace()
  }
}

/** After a member or an element: true at the bracket that closes it, false at a comma (either taken). */
function atEnd (close: number): boolean {
  skipSpace()
  const c = b[i]
  i++
  if (c === close) return true
  if (c !== COMMA) decline()
  return false
}

/** The index in `names` of the key at the cursor (spaces skipped). */
function readKey (names: readonly Buffer[]): number {
  if (b[i] !== QUOTE) decline()
  const from = i + 1
  let to = from
  while (to < end && b[to] !== QUOTE) to++
  const length = to - from
  for (let k = 0; k < names.length; k++) {
    const name = names[k]!
    if (name.length !== length) continue
    let same = true
    for (let j = 0; j < length; j++) {
      if (b[from + j] !== name[j]) { same = false; break }
    }
    if (same) { i = to + 1; return k }
  }
  return decline()
}

/** A string with no escape and no control character; UTF-8 decoded as the whole body would be. */
function readString (): string {
  if (b[i] !== QUOTE) decline()
  const from = ++i
  let ascii = true
  for (;;) {
    if (i >= end) decline()
    const c = b[i]!
    if (c === QUOTE) break
    if (c === BACKSLASH || c < 0x20) decline()
    if (c >= 0x80) ascii = false
    i++
  }
  i++
  return b.toString(ascii ? 'latin1' : 'utf8', from, i - 1)
}

/**
 * A JSON number (RFC 8259 §6) not negative, its value as JSON.parse reads it: exact
 * digits and a power of ten, each a double, make a correctly rounded result in one
 * operation (Clinger's fast path); any other is read by `Number` from its text.
 */
function readNumber (): number {
  const from = i
  let c = b[i]!
  let m = 0
  let digits = 0
  let scale = 0
  if (c === 48) {
    i++
  } else if (c >= 49 && c <= 57) {
    do { m = m * 10 + (c - 48); digits++; c = b[++i]! } while (c >= 48 && c <= 57)
  } else {
    decline()   // a minus sign among them: the rules say what is wrong with it
  }
  if (b[i] === DOT) {
    c = b[++i]!
    if (!(c >= 48 && c <= 57)) decline()
    do { m = m * 10 + (c - 48); digits++; scale--; c = b[++i]! } while (c >= 48 && c <= 57)
  }
  c = b[i]!
  if (c === 101 || c === 69) {   // e, E
    c = b[++i]!
    let sign = 1
    if (c === 43 || c === 45) { sign = c === 45 ? -1 : 1; c = b[++i]! }
    if (!(c >= 48 && c <= 57)) decline()
    let e = 0
    do { e = e * 10 + (c - 48); c = b[++i]! } while (c >= 48 && c <= 57 && e < 1e6)
    if (c >= 48 && c <= 57) decline()
    scale += sign * e
  }
  if (digits <= 15 && scale >= -22 && scale <= 22) return scale < 0 ? m / POW10[-scale]! : m * POW10[scale]!
  return Number(b.toString('latin1', from, i))
}

/** The offset of the 20 characters of a quoted instant at the cursor (checked when compared or read). */
function readInstant (): number {
  if (b[i] !== QUOTE || b[i + INSTANT_LENGTH + 1] !== QUOTE) decline()
  const at = i + 1
  i += INSTANT_LENGTH + 2
  return at
}

/** The instant at `at`, on a quarter-hour and spelled as `instantText` spells it, else decline. */
function quarterAt (at: number): number {
  const text = b.toString('latin1', at, at + INSTANT_LENGTH)
  const ms = utcInstantMs(text)
  if (!(ms % QUARTER_HOUR_MS === 0) || instantText(ms) !== text) decline()
  return ms
}

const siteEnds: number[] = []

function readEnvelope (): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  readObject(ENVELOPE_KEYS, readEnvelopeField, body)
  return body
}

function readEnvelopeField (k: number, body: Record<string, unknown>): void {
  if (k === SITES) body.sites = readSites()
  else if (k === SLOT_DURATION) body.slot_duration_secs = readNumber()
  else body[ENVELOPE_NAMES[k]!] = readString()
}

function readSites (): unknown[] {
  const sites: unknown[] = []
  expect(OPEN_ARRAY)
  skipSpace()
  if (b[i] === CLOSE_ARRAY) { i++; return sites }
  for (;;) {
    const site: Record<string, unknown> = {}
    readObject(SITE_KEYS, readSiteField, site)
    sites.push(site)
    siteEnds.push(n)
    if (atEnd(CLOSE_ARRAY)) return sites
  }
}

function readSiteField (k: number, site: Record<string, unknown>): void {
  if (k === SLOTS) { readSlots(); site.energie_programmee = NO_SLOTS } else site[SITE_NAMES[k]!] = readString()
}

/** A site's slots, into the columns; a site whose slot list appears twice was declined by `readObject`. */
function readSlots (): void {
  expect(OPEN_ARRAY)
  skipSpace()
  if (b[i] === CLOSE_ARRAY) { i++; return }
  let prevFin = -1
  let prevEnd = NaN
  for (;;) {
    let debut = -1
    let fin = -1
    let energy = NaN
    if (isCompactSlot(view, i, end)) {
      debut = i + DEBUT_AT
      fin = i + FIN_AT
      i += ENERGY_AT
      skipSpace()
      energy = readNumber()
      expect(CLOSE_OBJECT)
    } else {
      readSlotObject()
      debut = slotDebut
      fin = slotFin
      energy = slotEnergy
    }
    if (debut < 0 || fin < 0 || !Number.isFinite(energy) || n === starts.length) decline()
    // Each slot starts where the one before it ended, spelled the same: contiguous, in order.
    const start = prevFin < 0 ? quarterAt(debut) : sameInstants(view, debut, prevFin) ? prevEnd : decline()
    let stop: number
    if (slotMs !== slotMs) {
      stop = quarterAt(fin)
      slotMs = stop - start
      if (!(slotMs > 0)) decline()
    } else {
      stop = start + slotMs
      if (!spellsQuarter(view, fin, stop)) decline()
    }
    starts[n] = start
    kwh[n] = energy
    n++
    if (!(start >= firstStartMs)) firstStartMs = start
    if (!(stop <= lastEndMs)) lastEndMs = stop
    if (!(energy <= maxKwh)) maxKwh = energy
    prevFin = fin
    prevEnd = stop
    // The usual case inline: a comma right after the slot.
    if (b[i] === COMMA) i++
    else if (atEnd(CLOSE_ARRAY)) return
    skipSpace()
  }
}

// A slot read by `readObject`: its fields, out of the closure (a captured local would make
// each loop iteration of `readSlots` allocate).
let slotDebut = -1
let slotFin = -1
let slotEnergy = NaN

function readSlotObject (): void {
  slotDebut = slotFin = -1
  slotEnergy = NaN
  readObject(SLOT_KEYS, readSlotField, undefined)
}

function readSlotField (k: number): void {
  if (k === DEBUT) slotDebut = readInstant()
  else if (k === FIN) slotFin = readInstant()
  else slotEnergy = readNumber()
}

/**
 * A slot as `JSON.stringify` writes one, `{"debut_utc":"…","fin_utc":"…","energie_kwh":`
 * then its number: its keys and quotes compared where they must be, four bytes at a time
 * (a byte at a time, the comparisons were half of this reader's time). Any other
 * spelling of a slot is read by `readObject`.
 */
const COMPACT = Buffer.from('{"debut_utc":"2026-11-21T23:00:00Z","fin_utc":"2026-11-21T23:15:00Z","energie_kwh":', 'latin1')
const DEBUT_AT = 14
const FIN_AT = DEBUT_AT + INSTANT_LENGTH + 13
const ENERGY_AT = COMPACT.length
// The words that cover the template's three literal parts, the last of each part
// overlapping the one before it; unrolled, since a loop over a table of them cost twice.
const word = (at: number) => COMPACT.readUInt32LE(at)
const A0 = word(0); const A1 = word(4); const A2 = word(8); const A3 = word(DEBUT_AT - 4)
const B = DEBUT_AT + INSTANT_LENGTH
const B0 = word(B); const B1 = word(B + 4); const B2 = word(B + 8); const B3 = word(FIN_AT - 4)
const C = FIN_AT + INSTANT_LENGTH
const C0 = word(C); const C1 = word(C + 4); const C2 = word(C + 8); const C3 = word(ENERGY_AT - 4)

function isCompactSlot (v: DataView, p: number, limit: number): boolean {
  return p + ENERGY_AT < limit &&
    v.getUint32(p, true) === A0 && v.getUint32(p + 4, true) === A1 && v.getUint32(p + 8, true) === A2 && v.getUint32(p + DEBUT_AT - 4, true) === A3 &&
    v.getUint32(p + B, true) === B0 && v.getUint32(p + B + 4, true) === B1 && v.getUint32(p + B + 8, true) === B2 && v.getUint32(p + FIN_AT - 4, true) === B3 &&
    v.getUint32(p + C, true) === C0 && v.getUint32(p + C + 4, true) === C1 && v.getUint32(p + C + 8, true) === C2 && v.getUint32(p + ENERGY_AT - 4, true) === C3
}

/** Whether the instants at `a` and `c` are spelled the same (20 bytes: five words). */
function sameInstants (v: DataView, a: number, c: number): boolean {
  return v.getUint32(a, true) === v.getUint32(c, true) && v.getUint32(a + 4, true) === v.getUint32(c + 4, true) &&
    v.getUint32(a + 8, true) === v.getUint32(c + 8, true) && v.getUint32(a + 12, true) === v.getUint32(c + 12, true) &&
    v.getUint32(a + 16, true) === v.getUint32(c + 16, true)
}
