/**
 * What the scrape-time gauges read, from the running plugin's parts. Each read is cheap
 * enough for a scrape every few seconds on the solver's event loop: tomorrow's newest
 * revision is one range read of the small index, redone only when the store generation
 * moved (a publication, by this process or the CLI).
 * @module
 */
import type { Clock } from '../host/contract.ts'
import { addDays, parisDateOf } from '../contract/paris-day.ts'
import type { Deliveries } from '../store/deliveries.ts'
import type { Instructions } from '../store/instructions.ts'
import type { Revisions } from '../store/revisions.ts'
import type { MetricSources, RealisationGauges } from './registry.ts'
import type { Expiry } from './expiries.ts'

export function metricSources (deps: {
  readonly clock: Clock
  readonly generation: () => number
  readonly revisions: Pick<Revisions, 'latestOfDay'>
  readonly instructions: Pick<Instructions, 'effectiveFrom'>
  readonly deliveries: Pick<Deliveries, 'lastFetchByCompany'>
  readonly expiries: () => readonly Expiry[]
  readonly realisationToday?: () => RealisationGauges
  readonly leading?: () => boolean
  readonly quotaToday?: MetricSources['quotaToday']
  readonly webhooksFailing?: MetricSources['webhooksFailing']
  readonly webhooksOldestUndelivered?: MetricSources['webhooksOldestUndelivered']
}): MetricSources {
  const tomorrow = () => addDays(parisDateOf(deps.clock.now()), 1)
  let newest: { key: string; ms: number | undefined } = { key: '', ms: undefined }
  return {
    nowMs: () => deps.clock.now().getTime(),
    tomorrowPublishedMs () {
      const day = tomorrow()
      const key = `${day}/${deps.generation()}`
      if (newest.key !== key) {
        let ms: number | undefined
        for (const m of deps.revisions.latestOfDay(day)) if (ms === undefined || m.emittedAtMs > ms) ms = m.emittedAtMs
        newest = { key, ms }
      }
      return newest.ms
    },
    tomorrowInstructions () {
      const day = tomorrow()
      let n = 0
      for (const i of deps.instructions.effectiveFrom(day)) {
        if (i.targetDate !== day) break
        n++
      }
      return n
    },
    lastFetchByCompany: () => deps.deliveries.lastFetchByCompany(),
    expiries: deps.expiries,
    ...(deps.realisationToday ? { realisationToday: deps.realisationToday } : {}),
    ...(deps.leading ? { leading: deps.leading } : {}),
    ...(deps.quotaToday ? { quotaToday: deps.quotaToday } : {}),
    ...(deps.webhooksFailing ? { webhooksFailing: deps.webhooksFailing } : {}),
    ...(deps.webhooksOldestUndelivered ? { webhooksOldestUndelivered: deps.webhooksOldestUndelivered } : {}),
  }
}
