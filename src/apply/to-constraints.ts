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
 */
export function floorOrCurtailment (startUtc: string, endUtc: string, energyKwh: number, slotDurationSecs: number): Period {
  return energyKwh > 0
    ? { startUtc, endUtc, minKw: powerKw(energyKwh, slotDurationSecs) }
    : { startUtc, endUtc, maxKw: 0 }
}

/** One slot as a solver period. */
export function toPeriod (startMs: number, energyKwh: number, slotDurationSecs: number): Period {
  return floorOrCurtailment(instantText(startMs), instantText(startMs + slotDurationSecs * 1000), energyKwh, slotDurationSecs)
}

/**
 * Slots `[from, to)` of parallel arrays (an instruction batch) as periods. A slot that
 * starts where the previous one ended reuses its end string (one boundary lookup a slot).
 */
export function periodsOf (starts: Float64Array, kwh: Float64Array, from: number, to: number, slotDurationSecs: number): Period[] {
  const out = new Array<Period>(to - from)
  const durationMs = slotDurationSecs * 1000
  let prevEndMs = NaN
  let prevEnd = ''
  for (let k = from; k < to; k++) {
    const startMs = starts[k]!
    const startUtc = startMs === prevEndMs ? prevEnd : instantText(startMs)
    prevEndMs = startMs + durationMs
    const endUtc = prevEnd = instantText(prevEndMs)
    out[k - from] = floorOrCurtailment(startUtc, endUtc, kwh[k]!, slotDurationSecs)
  }
  return out
}

/** The periods of a stored instruction. */
export function instructionPeriods (i: Pick<Instruction, 'slots' | 'slotDurationSecs'>): Period[] {
  return i.slots.map(([startUtc, energyKwh]) => toPeriod(utcInstantMs(startUtc), energyKwh, i.slotDurationSecs))
}

