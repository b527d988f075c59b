/**
 * Publication, wired once: the revisions kept in a store and the one publisher that
 * writes them, from the `publish` configuration. The plugin (with the host's solver and
 * clock) and `epx publish` (with the reference host's) open it the same way.
 * @module
 */
import type { Clock, Logger, SolverPort } from '../host/contract.ts'
import type { Store } from '../store/open-store.ts'
import { openRevisions, type Revisions } from '../store/revisions.ts'
import { createPublisher, type Publisher, type PublisherOptions } from './publish-run.ts'

/** The `publish` configuration keys publication needs. */
export interface PublicationOptions {
  readonly emittedBy: string
  readonly retentionDays: number
}

export interface PublicationDeps {
  readonly solver: SolverPort
  readonly clock: Clock
  readonly log: Logger
  /** Told after every run (the audit trail, metrics). */
  readonly onRun?: PublisherOptions['onRun']
  /** Whether this instance runs retention after its runs (the leader of those sharing the store; default: always). */
  readonly leads?: PublisherOptions['leads']
  readonly fenced?: PublisherOptions['fenced']
}

export interface Publication {
  /** What the outbound door serves and the schedule reads. */
  readonly revisions: Revisions
  readonly publisher: Publisher
  /** Waits for the run in progress, then releases the revisions' files. */
  close(): Promise<void>
}

export function openPublication (store: Store, options: PublicationOptions, deps: PublicationDeps): Publication {
  const revisions = openRevisions(store, { retentionDays: options.retentionDays })
  const publisher = createPublisher({ solver: deps.solver, revisions, clock: deps.clock, log: deps.log, emittedBy: options.emittedBy, onRun: deps.onRun, leads: deps.leads, fenced: deps.fenced })
  return {
    revisions,
    publisher,
    async close () {
      try {
        await publisher.close()
      } finally {
        revisions.close()
      }
    },
  }
}
