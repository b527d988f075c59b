/**
 * Keeps one `process.nextTick` record alive for the life of the thread, so that every later
 * one is made with the same hidden class.
 *
 * Why: node's `nextTick` builds its record as an object literal whose first keys are
 * computed (`{ [async_id_symbol]: …, [trigger_async_id_symbol]: … }`). V8 holds the classes
 * such a literal goes through weakly: when a full collection finds no record alive, they
 * die, and the next record gets new ones. After a few full collections the literal's
 * define site has seen more than four classes, goes megamorphic for good, and every
 * `nextTick` (node's streams call it several times a request) takes V8's runtime path. In
 * the door that was 5–9 % of its CPU a GET (bench/README.md#nodes-tick-records); a
 * process that rarely runs a full collection (a bare server) never meets it.
 * @module
 */
import { createHook } from 'node:async_hooks'

// load-bearing: GET 304, the door's 48 and 40 → 33 µs a request; GET 200, 58 and 47 → 43 (bench/README.md#nodes-tick-records)
let kept: readonly object[] | undefined

/**
 * Once per thread, before the thread's first full collection if it can: takes the records of
 * two ticks (with and without arguments) through a hook enabled for that moment only.
 */
export function keepTickObjects (): void {
  if (kept) return
  const records: object[] = []
  try {
    const hook = createHook({ init (_id, type, _trigger, resource) { if (type === 'TickObject') records.push(resource) } })
    hook.enable()
    try {
      process.nextTick(noop)
      process.nextTick(noop, 0)
    } finally {
      hook.disable()
    }
  } catch {
    // An older or newer node without the hook: nothing is lost but the speed it buys.
  }
  kept = records
}

function noop (): void {}
