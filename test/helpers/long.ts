/**
 * The size a long system test runs at. `npm test` runs each at a small size (the behaviour,
 * on every change, within the suite's few minutes); `npm run campaign` runs the same files
 * again at full size with `EPX_LONG=1` (its `system` row, test/campaign/system.ts), as does
 * `EPX_LONG=1 npx tap <file>`. One test, two sizes: never two copies of a test.
 *
 *   const SITES = sized(190, 1900)     // 1900 under EPX_LONG=1, else 190
 * @module
 */
export const LONG = process.env.EPX_LONG === '1'

/** `long` under `EPX_LONG=1`, else `short`. */
export function sized<T> (short: T, long: T): T {
  return LONG ? long : short
}
