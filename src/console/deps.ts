/**
 * What every console page module gets: the plugin's store and the records opened on
 * it, its publisher and solver, the clock, and where the API listens (for the curl
 * lines a page shows). Built once by `server.ts`; pages never open the store themselves.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { Clock, Logger, Site } from '../host/contract.ts'
import type { Publisher } from '../publish/publish-run.ts'
import type { Companies } from '../store/companies.ts'
import type { Tenure } from '../store/tenure.ts'
import type { Instructions } from '../store/instructions.ts'
import type { Store } from '../store/open-store.ts'
import type { Revisions } from '../store/revisions.ts'
import type { Sessions } from '../store/sessions.ts'
import type { Tokens } from '../store/tokens.ts'
import type { Users } from '../store/users.ts'
import type { Audit } from '../store/audit.ts'
import type { Deliveries } from '../store/deliveries.ts'
import type { InstructionFlags } from '../store/instruction-flags.ts'
import type { LoginThrottle } from './login-throttle.ts'
import type { EpxConfig } from '../config.ts'
import type { StorageQuota } from '../apply/quota.ts'
import type { Webhooks } from '../store/webhooks.ts'
import type { ConnectOptions } from '../webhooks/post-event.ts'

export interface ConsoleDeps {
  readonly store: Store
  readonly companies: Companies
  /** The perimeter history, shown on a company's page (opened on `store` by server.ts). */
  readonly tenure: Pick<Tenure, 'historyOf'>
  readonly tokens: Tokens
  readonly users: Users
  readonly sessions: Sessions
  readonly revisions: Revisions
  readonly instructions: Instructions
  /** Programme against delivery: the instructions, the meter values and the tolerance (opened on `store` by server.ts). */
  readonly realisation: import('../apply/realisation.ts').DayDeps
  /** The feasibility flags stored beside the instructions (opened on `store` by server.ts). */
  readonly flags: Pick<InstructionFlags, 'get'>
  /** "Publier maintenant": the plugin's publisher (asked of the solver's thread when the console runs in the door's worker). */
  readonly publisher: Pick<Publisher, 'publish'>
  /** The plugin's audit trail: every change made in the console is recorded with its user. */
  readonly audit: Audit
  /** The delivery receipts the service has written (who fetched which revision; opened on `store` by server.ts). */
  readonly deliveries: Pick<Deliveries, 'list'>
  /** The sites the solver manages (`host.solver.sites`); pages filter them by the viewer's perimeter. */
  readonly sites: () => Promise<readonly Site[]>
  readonly clock: Clock
  readonly log: Logger
  /** The API's base URL, for the curl commands pages show. */
  readonly apiUrl: URL
  readonly session: { readonly idleMs: number; readonly maxMs: number }
  /** The company page's limits: the configuration's request budgets, and the storage quota with each company's use of the day (built by server.ts). */
  readonly limits: { readonly rateLimit: EpxConfig['api']['rateLimit']; readonly quota: StorageQuota }
  /**
   * The webhook pages: the endpoints, each company's last event (a new endpoint starts
   * after it), and how the echo check connects, read from the configuration when asked
   * (built by server.ts).
   */
  readonly webhooks: {
    readonly endpoints: Webhooks
    lastEvent(companyId: string): number
    connect(): ConnectOptions
    /** After a change is durable: the process's deliverer looks again now, not at its next rescan. */
    changed(): void
  }
  /** The login throttle, shared by the login form and the password change (built by server.ts). */
  readonly loginThrottle: LoginThrottle
}

/** A page module: registers its routes on the console (see `server.ts`, PAGES). */
export type ConsolePage = (app: FastifyInstance, deps: ConsoleDeps) => void | Promise<void>
