/**
 * `api.tls.crlFile`: the client CA's revocation list in force, re-read when the file
 * changes, so an operator shuts out a leaked certificate without a restart.
 *
 * Why the serials are checked here and not by passing `crl` to node's TLS context:
 * - a TLS context only judges new handshakes, and connections opened before the new
 *   list must be refused on their next request too, so a per-connection check is
 *   needed anyway;
 * - OpenSSL refuses every certificate of a CA once its CRL is past nextUpdate, which
 *   would lock every company out because a CA was late; here a stale list keeps being
 *   enforced and a `warn` says so.
 * The cost stays off the request path: each connection's verdict is computed once, and
 * again only when `generation` moves (one number comparison per request,
 * `auth/client-cert.ts`).
 * @module
 */
import { readFileSync, statSync, type Stats } from 'node:fs'
import { readFile, stat } from 'node:fs/promises'
import { EpxError } from '../errors.ts'
import type { Clock, Logger } from '../host/contract.ts'
import type { RevocationCheck } from './client-cert.ts'
import { readRevocationList, revocationKey, type RevocationList } from './crl.ts'

export interface RevocationWatch extends RevocationCheck {
  /** Stops watching the file. Idempotent. */
  close(): void
}

export interface WatchCrlOptions {
  readonly crlPath: string
  readonly caPath: string
  readonly log: Logger
  readonly clock: Clock
  /** How often the file's stat is compared (default 1 s). */
  readonly intervalMs?: number
}

/**
 * Loads the CRL (an unreadable, unparsable or unverified one is EPX_CRL_INVALID: the
 * service does not start without the list it was told to enforce), then polls the
 * file: fs.watch misses a replace-by-rename, a stat of inode, size and mtime does not.
 */
export async function watchCrl (opts: WatchCrlOptions): Promise<RevocationWatch> {
  const { crlPath, caPath, log, clock } = opts
  let list: RevocationList
  let seen: string
  try {
    seen = signature(statSync(crlPath))
    list = await readRevocationList(readFileSync(crlPath, 'utf8'), readFileSync(caPath, 'utf8'))
  } catch (err) {
    throw new EpxError('EPX_CRL_INVALID', [crlPath, (err as Error).message], { cause: err })
  }
  let generation = 0
  let staleWarned = false
  const loaded = (verb: string) => {
    staleWarned = false
    log.info({ crlFile: crlPath, revoked: list.count, nextUpdate: list.nextUpdate?.toISOString() }, `client CRL ${verb}`)
    warnIfStale()
  }
  const warnIfStale = () => {
    if (staleWarned || !list.nextUpdate || clock.now().getTime() <= list.nextUpdate.getTime()) return
    staleWarned = true
    log.warn({ crlFile: crlPath, nextUpdate: list.nextUpdate.toISOString() },
      'client CRL is past its nextUpdate; it is still enforced: publish a fresh CRL from the client CA')
  }
  loaded('loaded')

  let busy = false
  let closed = false
  const poll = async () => {
    if (busy || closed) return
    busy = true
    try {
      let now: string
      try {
        now = signature(await stat(crlPath))
      } catch (err) {
        now = `unreadable:${(err as NodeJS.ErrnoException).code ?? ''}`
      }
      if (now !== seen && !closed) {
        seen = now   // stat before read: a write that lands during the read changes it again
        try {
          const [crl, ca] = await Promise.all([readFile(crlPath, 'utf8'), readFile(caPath, 'utf8')])
          list = await readRevocationList(crl, ca)
          generation++
          loaded('reloaded')
        } catch (err) {
          log.error({ crlFile: crlPath, reason: (err as Error).message },
            'client CRL refused; the previous list stays in force until a valid one replaces it')
        }
      }
      warnIfStale()
    } finally {
      busy = false
    }
  }
  const timer = setInterval(() => {
    poll().catch((err: unknown) => log.error({ crlFile: crlPath, err }, 'client CRL check failed'))   // never the host's problem
  }, opts.intervalMs ?? 1000)
  timer.unref()

  return {
    get generation () { return generation },
    revoked: (issuer, serial) => list.revoked.has(revocationKey(issuer, serial)),
    close: () => { closed = true; clearInterval(timer) },
  }
}

function signature (s: Stats): string {
  return `${s.ino}:${s.size}:${s.mtimeMs}`
}
