/**
 * The audit trail: one append-only record per state-changing event (a programme
 * accepted or rejected, a publication run, a token or company change, a dead token
 * used), durable in LMDB, kept `audit.retentionDays` (400 by default), so an operator
 * answers "who sent what, when" from epx's own records. Never a secret: ids only, and
 * anything shaped like a token secret is masked before it is stored.
 * @module
 */
import { userInfo } from 'node:os'
import type { Store } from './open-store.ts'
import { unfenced } from './leadership.ts'

/** Who caused the event. */
export type AuditActor =
  | { readonly kind: 'company'; readonly companyId: string; readonly tokenId?: string }
  | { readonly kind: 'cli'; readonly user: string }
  | { readonly kind: 'console'; readonly user: string }
  | { readonly kind: 'schedule' }
  | { readonly kind: 'host' }

export type AuditAction =
  | 'programme.accepted' | 'programme.rejected' | 'instruction.withdrawn'
  | 'publication.run'
  | 'token.created' | 'token.revoked' | 'token.refused'
  | 'company.created' | 'company.suspended' | 'company.resumed' | 'company.rebound'
  | 'company.limits' | 'company.rate-limited' | 'company.quota-exceeded'
  | 'user.login' | 'user.login-failed' | 'user.logout' | 'user.changed' | 'user.unlocked'
  | 'webhook.added' | 'webhook.removed' | 'webhook.rotated' | 'webhook.redelivered' | 'webhook.failing'

export interface AuditEvent {
  readonly actor: AuditActor
  readonly action: AuditAction
  /** What the event is about: an instruction id, a token id, a company id, a date. */
  readonly subject: string
  /** `ok`, or what went wrong in a few words (`refused 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST`). */
  readonly outcome: string
  /** The facts of the event (counts, ids, the first error details); never a secret. */
  readonly details?: Readonly<Record<string, unknown>>
}

export interface AuditRecord extends AuditEvent {
  /** ISO 8601 UTC. */
  readonly at: string
}

export interface AuditQuery {
  readonly sinceMs?: number
  readonly untilMs?: number
  /** Events whose actor is this company, or whose subject or details name it. */
  readonly companyId?: string
  /** An action, or a prefix ending in `.` (`token.`). */
  readonly action?: string
  readonly limit?: number
}

/** [atMs, process tag, sequence]: ordered by time, unique across the CLI and the service. */
type Key = [number, string, number]

const PRUNE_CHUNK = 1000
/** How long `record` lets records gather before their write (see `openAudit`). */
const RECORD_DELAY_MS = 20
/** A token secret (`epx_` + 43 base64url), wherever it would hide in a record. */
const SECRET = /epx_[A-Za-z0-9_-]{20,}/g

/** Masks anything that looks like a token secret (belt and braces: callers pass ids only). */
function masked (value: unknown): unknown {
  // Every record passes here, an accepted POST's inside its save: copy only what has a secret.
  return holdsSecret(value) ? maskedCopy(value) : value
}

function holdsSecret (value: unknown): boolean {
  if (typeof value === 'string') return value.includes('epx_')
  if (value && typeof value === 'object') {
    for (const v of Array.isArray(value) ? value : Object.values(value)) if (holdsSecret(v)) return true
  }
  return false
}

function maskedCopy (value: unknown): unknown {
  if (typeof value === 'string') return value.replace(SECRET, 'epx_[redacted]')
  if (Array.isArray(value)) return value.map(maskedCopy)
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskedCopy(v)]))
  }
  return value
}

/** The audit trail: what the plugin, the CLI and the console may ask of it. */
export interface Audit {
  /** Appends one record, durably: resolves once it is on disk (the CLI's changes). */
  append(event: AuditEvent, atMs: number): Promise<void>
  /** Appends without making the caller wait; written within a few ms with the records around it. */
  record(event: AuditEvent, atMs: number): void
  /**
   * Appends inside the caller's own `writeDurable` (an accepted programme's record rides
   * in the transaction that saves its instructions: no commit or flush of its own).
   */
  appendSync(event: AuditEvent, atMs: number): void
  /** Writes the records still waiting (close()). */
  flush(): Promise<void>
  /** Records in time order, filtered. */
  list(q?: AuditQuery): AuditRecord[]
  /**
   * `list` with each record's key: text unique across the CLI and the service that sorts
   * as the records do (time, then writer, then sequence), for a list read page by page.
   */
  keyed(q?: AuditQuery): Array<{ readonly key: string; readonly record: AuditRecord }>
  /** Removes records older than the retention; resolves to their count. */
  prune(nowMs: number): Promise<number>
}

export function openAudit (store: Store, opts: { retentionDays?: number } = {}): Audit {
  const db = store.db<AuditRecord>('audit')
  const retentionMs = (opts.retentionDays ?? 400) * 86_400_000
  const tag = `${process.pid.toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`
  let seq = 0

  // Records waiting for their write job: every record made before that job runs joins
  // it. `record` (the service's events) waits RECORD_DELAY_MS first, so the audit of a
  // burst of POSTs is one put loop riding in a group commit the saves make anyway, not
  // one more commit each (bench/ops-costs.ts: ~100 µs of CPU a POST otherwise).
  let pending: Array<[Key, AuditRecord]> = []
  let job: Promise<void> | undefined
  let timer: NodeJS.Timeout | undefined
  const write = (): Promise<void> => {
    if (timer) { clearTimeout(timer); timer = undefined }
    if (job) return job
    const mine: Promise<void> = job = store.writeDurable(() => {
      const batch = pending
      pending = []
      job = undefined
      for (const [k, r] of batch) db.putSync(k, r)
    })
    // Refused before it ran (the store is down): those records are lost with it, as the caller is told.
    mine.catch(() => { if (job === mine) { job = undefined; pending = [] } })
    return mine
  }
  const make = (event: AuditEvent, atMs: number): [Key, AuditRecord] =>
    [[atMs, tag, seq++], masked({ at: new Date(atMs).toISOString(), ...event }) as AuditRecord]

  const api: Audit = {
    /** Appends one record, durably: resolves once it is on disk (the CLI's changes). */
    append (event: AuditEvent, atMs: number): Promise<void> {
      pending.push(make(event, atMs))
      return write()
    },

    /**
     * Appends without making the caller wait (the request it describes is already
     * answered), within RECORD_DELAY_MS; a failed write is a store fault, logged once by
     * the store's fault log. A crash may lose the records of that last moment; the
     * instructions themselves, with their sender, are durable before their 202.
     */
    record (event: AuditEvent, atMs: number): void {
      pending.push(make(event, atMs))
      if (!job && !timer) {
        // Outside a fenced run that records (a publication's): the records it gathers are everyone's.
        timer = unfenced(() => setTimeout(() => { write().catch(() => {}) }, RECORD_DELAY_MS))
        timer.unref()
      }
    },

    appendSync (event: AuditEvent, atMs: number): void {
      const [k, r] = make(event, atMs)
      db.putSync(k, r)
    },

    /** Writes the records still waiting (close()). */
    flush (): Promise<void> {
      return pending.length || job ? write() : Promise.resolve()
    },

    /** Records in time order, filtered. */
    list (q: AuditQuery = {}): AuditRecord[] {
      return api.keyed(q).map(k => k.record)
    },

    keyed (q: AuditQuery = {}): Array<{ key: string; record: AuditRecord }> {
      const out: Array<{ key: string; record: AuditRecord }> = []
      const range = {
        start: [q.sinceMs ?? 0],
        ...(q.untilMs === undefined ? {} : { end: [q.untilMs + 1] }),
      }
      for (const { key, value } of db.getRange(range)) {
        if (!Array.isArray(key)) continue   // the msgpack shapes live under a symbol key
        if (q.action !== undefined && !(q.action.endsWith('.') ? value.action.startsWith(q.action) : value.action === q.action)) continue
        if (q.companyId !== undefined && !concerns(value, q.companyId)) continue
        out.push({ key: keyText(key as Key), record: value })
        if (q.limit !== undefined && out.length >= q.limit) break
      }
      return out
    },

    /** Removes records older than the retention, in small transactions; resolves to their count. */
    async prune (nowMs: number): Promise<number> {
      const cutoff = nowMs - retentionMs
      let removed = 0
      for (;;) {
        const keys = [...db.getKeys({ start: [0], end: [cutoff], limit: PRUNE_CHUNK })].filter(Array.isArray) as Key[]
        if (!keys.length) break
        await store.writeDurable(() => { for (const k of keys) db.removeSync(k) })
        removed += keys.length
        if (keys.length < PRUNE_CHUNK) break
      }
      return removed
    },
  }
  return api
}

/** A record's key as text that sorts as the keys do: fixed-width time and sequence. */
function keyText ([atMs, tag, seq]: Key): string {
  return `${String(atMs).padStart(15, '0')}.${tag}.${String(seq).padStart(12, '0')}`
}

function concerns (r: AuditRecord, companyId: string): boolean {
  if (r.actor.kind === 'company' && r.actor.companyId === companyId) return true
  if (r.subject === companyId) return true
  return r.details?.companyId === companyId
}

/** The details as `key=value` pairs, short enough for a table cell (`epx audit list`, the console). */
export function auditDetailsText (r: Pick<AuditRecord, 'details'>, max = 160): string {
  const text = Object.entries(r.details ?? {}).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ')
  return text.length > max ? text.slice(0, max - 3) + '...' : text
}

/** The CLI's actor: the operating-system user running `epx` (no `USER` in a container or a cron job: asked of the system). */
export function cliActor (): AuditActor {
  let user = process.env.USER ?? process.env.USERNAME
  if (!user) {
    try { user = userInfo().username } catch { user = `uid ${process.getuid?.() ?? 'unknown'}` }
  }
  return { kind: 'cli', user }
}
