/**
 * The sites the solver manages (the host's `sites()`), as the inbound check reads them:
 * a set held in memory, so a POST costs no call to the host (DECISIONS.md "Inbound": a
 * site the solver does not manage is refused). The set is read again when it is older
 * than `maxAgeMs`, by the first POST that finds it so; a host that cannot answer leaves
 * the last set in force (or, before any answer, no check: epx refuses nothing it cannot
 * know to be wrong).
 * @module
 */
import type { Clock, Logger } from '../host/contract.ts'

/** How long a read of the host's sites stands: a site the host adds is known within this. */
export const MANAGED_SITES_MAX_AGE_MS = 30_000
/** How long a POST waits for the host's answer before it goes on with what it has. */
const ASK_TIMEOUT_MS = 2_000

export interface ManagedSites {
  /** The current set (undefined: the host never answered); reads it again first when stale. */
  current(): ReadonlySet<string> | undefined | Promise<ReadonlySet<string> | undefined>
}

export function managedSites (deps: {
  readonly read: () => Promise<ReadonlyArray<{ readonly site_id: string }>>
  readonly clock: Clock
  readonly log: Logger
  readonly maxAgeMs?: number
}): ManagedSites {
  const maxAgeMs = deps.maxAgeMs ?? MANAGED_SITES_MAX_AGE_MS
  let set: ReadonlySet<string> | undefined
  let readAtMs = -Infinity
  let reading: Promise<ReadonlySet<string> | undefined> | undefined
  let warned = false

  const refresh = (): Promise<ReadonlySet<string> | undefined> => {
    reading ??= (async () => {
      let timer: NodeJS.Timeout | undefined
      try {
        const sites = await Promise.race([
          deps.read(),
          new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ASK_TIMEOUT_MS} ms`)), ASK_TIMEOUT_MS) }),
        ])
        set = new Set(sites.map(s => s.site_id))
        warned = false
      } catch (err) {
        if (!warned) deps.log.warn({ err }, 'could not read the solver\'s sites: programmes are checked against the last list read (none yet: not checked)')
        warned = true
      } finally {
        clearTimeout(timer)
        // A failure is retried after the same delay: a host that cannot answer is not asked on every POST.
        readAtMs = deps.clock.now().getTime()
        reading = undefined
      }
      return set
    })()
    return reading
  }

  return {
    current () {
      if (deps.clock.now().getTime() - readAtMs < maxAgeMs) return set
      return refresh()
    },
  }
}
