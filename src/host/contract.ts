/**
 * The host contract: what a solver daemon hands to the plugin, and what it gets back.
 * Only `plugin.ts` and `host/` know the host's concrete shape.
 * @module
 */
import type { Coverage } from '../contract/paris-day.ts'

/**
 * The host API version this build of the reference host implements. 1.1 added
 * `EpxHandle.reportMetering`: a 1.0 host, which never calls it, works as before.
 */
export const HOST_API_VERSION = '1.1.0'

/** Injected time source: every clock in epx is this one, so tests can stand on any day. */
export interface Clock { now(): Date }

/** A pino-compatible subset; the host passes a child logger. */
export interface Logger {
  debug(obj: object, msg?: string): void
  info(obj: object, msg?: string): void
  warn(obj: object, msg?: string): void
  error(obj: object, msg?: string): void
  child(bindings: Record<string, unknown>): Logger
}

/** A site the solver manages. */
export interface Site {
  readonly site_id: string
  readonly site_name: string
}

/** The Paris day a publication or an instruction is about, as UTC instants (contract/paris-day.ts computes it). */
export type { Coverage }

/** What the solver needs for a site over a coverage: the material of a Besoins_Agreges. */
export interface SiteNeeds {
  readonly milestones: ReadonlyArray<{
    readonly startUtc: string
    readonly deadlineUtc: string
    readonly energyKwh: number
    readonly powerKw: number
  }>
  /** One entry per quarter-hour of the coverage, in order. */
  readonly availablePowerKw: readonly number[]
}

/** One constrained slot: a floor (`minKw`) or a curtailment (`maxKw` = 0). */
export interface Period {
  readonly startUtc: string
  readonly endUtc: string
  readonly minKw?: number
  readonly maxKw?: number
}

/** An instruction as the solver sees it: replaces any earlier one of the same site and day. */
export interface SolverInput {
  readonly instructionId: string
  readonly siteId: string
  readonly targetDate: string
  /**
   * Built when first read, then the same array (an accessor: epx hands the solver
   * thousands of inputs it may supersede unread). `JSON.stringify` and `structuredClone`
   * copy it like any property.
   */
  readonly periods: readonly Period[]
}

/** Told by the solver after a cycle took inputs into account. */
export interface CycleApplied {
  readonly cycle: number
  readonly at: string
  readonly inputs: ReadonlyArray<{ readonly instructionId: string; readonly siteId: string }>
}

export interface SolverPort {
  /** Sites the solver manages. */
  sites(): Promise<readonly Site[]>
  /** Needs of one site over a coverage. May reject for that site alone. */
  needs(siteId: string, coverage: Coverage): Promise<SiteNeeds>
  /** Inputs for the next solver cycle; the latest input of a (site, day) replaces earlier ones. */
  enqueueNextCycle(inputs: readonly SolverInput[]): void
  /** Listen for cycles that applied inputs; returns the unsubscribe function. */
  onCycleApplied(listener: (report: CycleApplied) => void): () => void
}

export interface Host {
  /**
   * Optional: the host's own prom-client registry. epx then registers its metrics there
   * (and removes them on close) instead of in a registry of its own; `metrics.enabled`
   * still decides whether epx also serves them on its own listener.
   */
  readonly metricsRegistry?: import('prom-client').Registry
  /** Checked against the manifest's `engines.host` range. */
  readonly apiVersion: string
  readonly logger: Logger
  readonly clock: Clock
  /** A folder the plugin owns: its LMDB store lives here. */
  readonly dataDir: string
  readonly solver: SolverPort
}

export interface PublishRequest {
  /** Default: tomorrow (Europe/Paris) by the host clock. */
  readonly targetDate?: string
  /** Default: every site the solver manages. */
  readonly siteIds?: readonly string[]
}

export interface PublishReport {
  readonly targetDate: string
  readonly published: ReadonlyArray<{ readonly siteId: string; readonly emittedAt: string; readonly etag: string }>
  readonly failed: ReadonlyArray<{ readonly siteId: string; readonly reason: string }>
}

/**
 * The energy a site drew over one quarter-hour, as its meter measured it (host API 1.1).
 * A reading of a slot already reported replaces it (late meter data, corrections).
 */
export interface MeterReading {
  readonly siteId: string
  /** ISO 8601 UTC, on a quarter-hour boundary. */
  readonly startUtc: string
  /** `startUtc` + 15 minutes; the slot must have closed by the host clock. */
  readonly endUtc: string
  /** Energy drawn, kWh, ≥ 0. */
  readonly kwh: number
}

/** What `reportMetering` kept and refused. */
export interface MeteringReport {
  readonly accepted: number
  readonly refusedCount: number
  /** The first refusals (at most 100), with the index of the reading and why. */
  readonly refused: ReadonlyArray<{ readonly index: number; readonly siteId: string; readonly startUtc: string; readonly reason: string }>
}

/** What `activate` returns. */
export interface EpxHandle {
  readonly version: string
  /** Where the API listens, once activated. */
  readonly apiUrl: URL
  /** Where the web console listens; undefined when `console.enabled` is false. */
  readonly consoleUrl?: URL
  /** Where `/metrics`, `/healthz` and `/readyz` are served (`metrics.enabled`). */
  readonly metricsUrl?: URL
  /** Publish Besoins_Agreges now (one target date, some or all sites). */
  publish(request?: PublishRequest): Promise<PublishReport>
  /**
   * Host API 1.1: the metered energy of the solver's sites per quarter-hour, of today or
   * earlier days, as slots close or in batches. Resolves once the accepted readings are
   * durable; a refused reading (malformed, a slot not closed yet, a day past retention)
   * is listed, never thrown. Optional for the host: without it there is no delivery data.
   */
  reportMetering(readings: readonly MeterReading[]): Promise<MeteringReport>
  /** Idempotent: stops schedules and listeners, then closes the store. */
  close(): Promise<void>
}

export type Activate = (host: Host, config: unknown) => Promise<EpxHandle>
