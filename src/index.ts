/**
 * The public surface of epx: `activate(host, config)` and the types around it.
 * @module
 */
export { activate } from './plugin.ts'
export { HOST_API_VERSION } from './host/contract.ts'
export type {
  Activate, Clock, Coverage, CycleApplied, EpxHandle, Host, Logger, MeterReading, MeteringReport, Period,
  PublishReport, PublishRequest, Site, SiteNeeds, SolverInput, SolverPort,
} from './host/contract.ts'
export type { EpxConfig } from './config.ts'
export type { ErrorCode } from './errors.ts'
