/**
 * The test tiers (docs/development.md "Test tiers"). `npm test` is the fast tier: every rule
 * on every change, within 5 minutes on two cores. `npm run test:system` (`EPX_SYSTEM=1`) is
 * the system tier: the files that import this module again, with their tests marked
 * `SYSTEM_ONLY` and their variants, and the whole files `.taprc` excludes from `npm test`;
 * CI runs both tiers on each Node line. `EPX_LONG=1` runs the system tier at full size (the
 * campaign's `system` row, or `EPX_LONG=1 npx tap <file>`). One test, two sizes: never two
 * copies of a test.
 *
 *   const SITES = sized(190, 1900)     // 1900 under EPX_LONG=1, else 190
 *   t.test('every page at 1920 px', SYSTEM_ONLY, async t => { … })
 *   if (SYSTEM) t.same(await accessibilityProblems(page), [])
 * @module
 */
export const LONG = process.env.EPX_LONG === '1'

/** The system tier runs (`npm run test:system`, and at full size). */
export const SYSTEM = LONG || process.env.EPX_SYSTEM === '1'

/** `long` under `EPX_LONG=1`, else `short`. */
export function sized<T> (short: T, long: T): T {
  return LONG ? long : short
}

/**
 * Options of a test of the system tier: one whose rule another test of `npm test` already
 * checks at a smaller cost (a variant, a repetition, a second topology of the same path), or
 * a whole system's run. `npm test` reports it skipped, saying where it runs.
 */
export const SYSTEM_ONLY: { skip?: string } = SYSTEM ? {} : { skip: 'system tier: npm run test:system' }
