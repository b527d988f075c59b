/**
 * Energy slots → the solver's kW constraints (DECISIONS.md "Inbound", contract §2.2):
 * `power_kw = energie_kwh * 3600 / slot_duration_secs`; energy > 0 is a floor
 * (`minKw`), energy = 0 a curtailment (`maxKw = 0`); no slot, no constraint.
 * @module
 */
import type { Period } from '../host/contract.ts'
import type { Instruction } from '../contract/instruction.ts'
import { utcInstantMs } from '../contract/instants.ts'
import { instantText } from '../contract/instant-text.ts'

/** The constant power that delivers `energyKwh` over a slot of `slotDurationSecs`. */
export function powerKw (energyKwh: number, slotDurationSecs: number): number {
  return energyKwh * 3600 / slotDurationSecs
}

/**
 * The rule (DECISIONS.md "Inbound"): a slot with energy > 0 is a floor (`minKw`, the
 * power that delivers it), a slot with energy 0 a curtailment (`maxKw = 0`, no floor).
 * A floor is always a finite number (DECISIONS.md "Inbound", sanity bound): the rules
 * refuse a slot whose power is above `inbound.maxSiteKw`, so a slot whose energy is
 * negative, not a number, or whose power is not finite can only be a record from before
 * them; it is no constraint (undefined) rather than a floor no solver can meet.
 */
export function floorOrCurtailment (startUtc: string, endUtc: string, energyKwh: number, slotDurationSecs: number): Period | undefined {
  if (energyKwh === 0) return { startUtc, endUtc, maxKw: 0 }
  const kw = powerKw(energyKwh, slotDurationSecs)
  return kw > 0 && kw < Infinity ? { startUtc, endUtc, minKw: kw } : undefined
}

/** One slot as a solver period; undefined for a slot that is no constraint (`floorOrCurtailment`). */
export function toPeriod (startMs: number, energyKwh: number, slotDurationSecs: number): Period | undefined {
  return floorOrCurtailment(instantText(startMs), instantText(startMs + slotDurationSecs * 1000), energyKwh, slotDurationSecs)
}

/**
 * Slots `[from, to)` of parallel arrays (an instruction batch) as periods, those that are
 * no constraint left out. A slot that starts where the previous one ended reuses its end
 * string (one boundary lookup a slot).
 */
export function periodsOf (starts: Float64Array, kwh: Float64Array, from: number, to: number, slotDurationSecs: number): Period[] {
  const out = new Array<Period>(to - from)
  const durationMs = slotDurationSecs * 1000
  let prevEndMs = NaN
  let prevEnd = ''
  let n = 0
  for (let k = from; k < to; k++) {
    const startMs = starts[k]!
    const startUtc = startMs === prevEndMs ? prevEnd : instantText(startMs)
    prevEndMs = startMs + durationMs
    const endUtc = prevEnd = instantText(prevEndMs)
    const period = floorOrCurtailment(startUtc, endUtc, kwh[k]!, slotDurationSecs)
    if (period) out[n++] = period
  }
  out.length = n
  return out
}

/** A stored instruction's slots, each with its energy and the constraint it becomes (none: a slot that is no constraint, left out). */
export function instructionConstraints (i: Pick<Instruction, 'slots' | 'slotDurationSecs'>): Array<Period & { readonly energyKwh: number }> {
  const out: Array<Period & { readonly energyKwh: number }> = []
  for (const [startUtc, energyKwh] of i.slots) {
    const period = toPeriod(utcInstantMs(startUtc), energyKwh, i.slotDurationSecs)
    if (period) out.push({ ...period, energyKwh })
  }
  return out
}
