/**
 * mulberry32: a small PRNG whose whole state is the seed, so a property's steps replay
 * from the seed it prints.
 * @module
 */
export function prng (seed: number) {
  let a = seed >>> 0
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  return { next, int: (n: number) => Math.floor(next() * n), chance: (p: number) => next() < p }
}

export type Rng = ReturnType<typeof prng>
