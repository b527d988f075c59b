/**
 * The event-loop delay as the README's alerts read it: how late the loop ran a timer,
 * beyond the timer's own interval. `monitorEventLoopDelay` samples with a timer of
 * `resolution` ms and records the whole time between two samples, so an idle loop
 * reads the interval itself (10.2 ms at a 10 ms resolution). The interval is taken off
 * each figure here: an idle loop reads about 0, a 50 ms block about 50 ms.
 * @module
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'

export interface LoopDelay {
  /** Seconds of delay since the previous read (median, 99th percentile, max); the counts start again. */
  read(): { readonly p50: number; readonly p99: number; readonly max: number }
  stop(): void
}

/** Samples the loop every `resolutionMs` (10 ms: a cheap timer, and blocks of a few ms still show). */
export function sampleLoopDelay (resolutionMs = 10): LoopDelay {
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs })
  histogram.enable()
  const intervalNs = resolutionMs * 1e6
  const beyond = (ns: number) => Number.isFinite(ns) && ns > intervalNs ? (ns - intervalNs) / 1e9 : 0
  return {
    read () {
      const figures = { p50: beyond(histogram.percentile(50)), p99: beyond(histogram.percentile(99)), max: beyond(histogram.max) }
      histogram.reset()
      return figures
    },
    stop () { histogram.disable() },
  }
}
