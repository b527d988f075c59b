/**
 * The digest of an instruction's slots: what tells a re-send that changes an instruction
 * from one that does not (`apply/enqueue.ts`, the solver is not handed the same input
 * twice). The door's thread computes it for each site it hands over (`door/events-out.ts`),
 * so the solver's thread reads one number a site instead of hashing 96 slots.
 * @module
 */

const scratch = new Float64Array(1)
const words = new Int32Array(scratch.buffer)

/**
 * A 53-bit digest of slots `[a, b)` (all of them, those over included: the instruction as
 * stored): two 32-bit FNV-1a-like lanes over the 64-bit words. Not a security property
 * (~0.22 µs for 96 slots in one thread). Never negative: a negative digest marks a cleared input.
 */
export function slotsDigest (starts: ArrayLike<number>, kwh: ArrayLike<number>, a: number, b: number, slotDurationSecs: number): number {
  let h1 = Math.imul(0x811c9dc5 ^ slotDurationSecs, 0x01000193)
  let h2 = Math.imul(0x9e3779b9 ^ (b - a), 0x5bd1e995)
  for (let k = a; k < b; k++) {
    scratch[0] = starts[k]!
    h1 = Math.imul(h1 ^ words[0]!, 0x01000193)
    h2 = Math.imul(h2 ^ words[1]!, 0x5bd1e995)
    scratch[0] = kwh[k]!
    h1 = Math.imul(h1 ^ words[1]!, 0x01000193)
    h2 = Math.imul(h2 ^ words[0]!, 0x5bd1e995)
    h2 ^= h1 >>> 15
  }
  return (h1 >>> 0) * 0x200000 + ((h2 >>> 0) & 0x1fffff)
}
