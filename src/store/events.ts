/**
 * The events of each company (DECISIONS.md "Events for BSPs"): what changed that it may
 * read, so that a BSP need not poll. Each event is written in the same durable write as
 * the change it announces (a publication's revisions, an instruction's status, a
 * perimeter, meter values): an acknowledged change always has its event, a rolled-back
 * one never does. The feed (`http/events-route.ts`) reads them; webhooks read the same.
 *
 * Ids are a counter per company, read and advanced inside the write: a PostgreSQL write
 * runs under the database's write lock once the replica has every earlier row
 * (postgres/write-batch.ts), so every instance gives the next number, and restarts
 * continue it. On the wire an id is that number as a fixed-width decimal string: opaque,
 * and strictly increasing compared as numbers or as strings.
 *
 * Keys: `events` `[company_id, seq]` → `[atMs, JSON text]` (the event as served, made
 * once, when written); `event-heads` `company_id` → `{last, pruned}`, written by retention
 * only: the last seq given when it ran, and the last one it removed (an `apres` before it
 * expired). The last seq given is the company's newest event's, read back in the write
 * that gives the next; the head's only once retention removed every one. So a write of
 * events touches one tree, not two: each tree a commit touches costs its pages' copies
 * (bench/README.md#b-trees-per-durable-commit).
 * @module
 */
import type { Store } from './open-store.ts'
import type { EventBell } from './event-bell.ts'
import type { CompanyRecord } from './companies.ts'

export const EVENTS_DB = 'events'
export const EVENT_HEADS_DB = 'event-heads'
/** `realise.modifie`'s pace per (company, site, day): `['t', c, s, d]` → when last told; `['o', dueMs, c, s, d]`: one owed. */
export const EVENT_THROTTLE_DB = 'event-throttle'
/** DECISIONS.md "Events for BSPs": at most one `realise.modifie` per site and day every 5 minutes. */
export const REALISE_EVERY_MS = 300_000

export type EventType = 'besoins_agreges.publie' | 'instruction.statut' | 'realise.modifie' | 'perimetre.modifie'
export const EVENT_TYPES: readonly EventType[] = ['besoins_agreges.publie', 'instruction.statut', 'realise.modifie', 'perimetre.modifie']

/** An event to write: its company, its type and its own members as JSON text (`"site_id":"PRM…",…`, no braces). */
export interface EventDraft {
  readonly companyId: string
  readonly type: EventType
  readonly fields: string
}

interface Head { readonly last: number; readonly pruned: number }
type Stored = [atMs: number, json: string]

/** Digits of an id on the wire: a company writing a million events a day needs 2,700 years to fill them. */
const ID_DIGITS = 15
const ID = /^\d{1,15}$/
const PRUNE_CHUNK = 1000
const MAX_SEQ = Number.MAX_SAFE_INTEGER

/** The wire id of a seq. */
export function eventId (seq: number): string {
  return String(seq).padStart(ID_DIGITS, '0')
}

/** The seq of a wire id, or undefined when it is not one. */
export function seqOfEventId (id: string): number | undefined {
  return ID.test(id) ? Number(id) : undefined
}

/** A page of a company's events. */
export type EventPage =
  /** `events`: JSON texts, oldest first; `next`: the id to continue after. */
  | { readonly kind: 'page'; readonly events: readonly string[]; readonly next: string }
  /** `after` is before what retention kept: `oldest` is the oldest id kept (none: every one expired), `resume` the cursor to read them all from. */
  | { readonly kind: 'expired'; readonly oldest: string | undefined; readonly resume: string }

/** The next event of some types after a cursor (`Events.nextOf`). */
export type NextEvent =
  /** The first of the types: its seq, when it was written, its JSON text as the feed serves it. */
  | { readonly kind: 'event'; readonly seq: number; readonly atMs: number; readonly json: string }
  /** None of the types among the events read: the last one's seq (to read past), the first one's time. */
  | { readonly kind: 'skip'; readonly seq: number; readonly atMs: number }
  | { readonly kind: 'none' }
  /** The cursor is before what retention kept: `resume` is the cursor to go on from. */
  | { readonly kind: 'expired'; readonly resume: number }

export interface Events {
  /** Inside the caller's `writeDurable`: appends the events, each company's in order; the bell rings once it is durable. */
  appendSync(drafts: readonly EventDraft[], atMs: number): void
  /** Sync: the company's events after `after` (undefined: from the oldest kept), at most `limit`. */
  page(companyId: string, after: number | undefined, limit: number): EventPage
  /** Sync: the last seq given to the company (0: none). */
  lastSeq(companyId: string): number
  /**
   * Sync: the first event after `after` of one of `types`, looking at the next `limit` at
   * most, each decoded only when reached (a webhook endpoint's next delivery).
   */
  nextOf(companyId: string, after: number, types: readonly EventType[], limit: number): NextEvent
  /**
   * Sync: when (ms) the first event after `after` of one of `types` was written, looking at
   * the next `limit` events (none of them of `types`: the first one's, which is still to be
   * read past; past an expired cursor, from the oldest kept); undefined when there is none after.
   */
  firstDueMs(companyId: string, after: number, types: readonly EventType[], limit: number): number | undefined
  /**
   * Inside the write of meter values: a `realise.modifie` for each (company, site, day)
   * not told within REALISE_EVERY_MS; the others are owed, told by `flushOwed` once
   * their 5 minutes are over (the owed mark is durable with the values).
   */
  realiseChangedSync(changed: ReadonlyArray<{ companyId: string; siteId: string; targetDate: string }>, nowMs: number): void
  /** Tells the owed `realise.modifie` whose time has come, in one durable write. */
  flushOwed(nowMs: number): Promise<void>
  /** When the next owed `realise.modifie` is due (undefined: none). */
  nextOwedMs(): number | undefined
  /** Removes events written more than `retentionDays` before `nowMs`, in small writes; resolves to their count. */
  prune(nowMs: number): Promise<number>
}

export interface EventsOptions {
  /** `events.retentionDays` (default 7). */
  readonly retentionDays?: number
  /** Rung once a write with events is durable. */
  readonly bell?: Pick<EventBell, 'ring'>
  /** Told of each durable write's events, per type (the metric `epx_events_written_total`). */
  readonly written?: (type: EventType, count: number) => void
}

/** What each thread's store handle tells of its events (`announceEvents`). */
const announced = new WeakMap<Store, Pick<EventsOptions, 'bell' | 'written'>>()

/**
 * Every `openEvents` of this store handle rings `bell` and tells `written`: the plugin and
 * the door's worker say so once, when they open their store, and each record module that
 * writes events (revisions, instructions, companies, metering) opens its own.
 */
export function announceEvents (store: Store, o: Pick<EventsOptions, 'bell' | 'written'>): void {
  announced.set(store, o)
}

export function openEvents (store: Store, options: EventsOptions = {}): Events {
  const opts: EventsOptions = { ...announced.get(store), ...options }
  const db = store.db<Stored>(EVENTS_DB)
  const heads = store.db<Head>(EVENT_HEADS_DB)
  const retentionMs = (opts.retentionDays ?? 7) * 86_400_000
  // A publication's events share their instant: its text is made once.
  let stamp = { ms: NaN, iso: '' }

  const throttle = store.db<{ atMs: number; owed?: 1 } | 1>(EVENT_THROTTLE_DB)
  const headOf = (companyId: string): Head => heads.get(companyId) ?? { last: 0, pruned: 0 }
  /** Per company, the last seq this handle gave or read: a guess, checked at each use (another thread, process or instance writes too). */
  const seen = new Map<string, number>()
  /**
   * The last seq given to a company: its newest event's. Retention keeps the newest one
   * unless every event expired, and writes the head then: newer events are above it. A
   * company's seqs kept are one run (each write gives the next, retention removes the
   * oldest first), so a seq kept whose next is absent is the last: two point reads, where
   * a range read inside a write opens a cursor at each call (bench/README.md#the-events-of-a-post).
   */
  const lastOf = (companyId: string): number => {
    const guess = seen.get(companyId)
    if (guess !== undefined && db.doesExist([companyId, guess]) && !db.doesExist([companyId, guess + 1])) return guess
    let last = heads.get(companyId)?.last ?? 0
    for (const key of db.getKeys({ start: [companyId, MAX_SEQ], end: [companyId, 0], reverse: true, limit: 1 })) last = (key as [string, number])[1]
    seen.set(companyId, last)
    return last
  }
  const realiseOf = (companyId: string, siteId: string, targetDate: string): EventDraft =>
    ({ companyId, type: 'realise.modifie', fields: `"site_id":"${siteId}","target_date":"${targetDate}"` })

  /** The companies that have events, in key order: one key read each, past the previous one's. */
  function * companiesWithEvents (): Generator<string> {
    let start: [string, number] | [string] = ['']
    for (;;) {
      const first = [...db.getKeys({ start, limit: 1 })][0] as [string, number] | undefined
      if (!first) return
      yield first[0]
      start = [first[0], MAX_SEQ]
    }
  }

  const api: Events = {
    realiseChangedSync (changed, nowMs) {
      const drafts: EventDraft[] = []
      for (const { companyId, siteId, targetDate } of changed) {
        const told = throttle.get(['t', companyId, siteId, targetDate]) as { atMs: number; owed?: 1 } | undefined
        if (!told || told.atMs + REALISE_EVERY_MS <= nowMs) {
          drafts.push(realiseOf(companyId, siteId, targetDate))
          throttle.putSync(['t', companyId, siteId, targetDate], { atMs: nowMs })
          if (told?.owed) throttle.removeSync(['o', told.atMs + REALISE_EVERY_MS, companyId, siteId, targetDate])
        } else if (!told.owed) {
          throttle.putSync(['t', companyId, siteId, targetDate], { atMs: told.atMs, owed: 1 })
          throttle.putSync(['o', told.atMs + REALISE_EVERY_MS, companyId, siteId, targetDate], 1)
        }
      }
      api.appendSync(drafts, nowMs)
    },

    flushOwed (nowMs) {
      return store.writeDurable(() => {
        const drafts: EventDraft[] = []
        for (const key of [...throttle.getKeys({ start: ['o', 0], end: ['o', nowMs + 1] })] as Array<[string, number, string, string, string]>) {
          const [, , companyId, siteId, targetDate] = key
          throttle.removeSync(key)
          throttle.putSync(['t', companyId, siteId, targetDate], { atMs: nowMs })
          drafts.push(realiseOf(companyId, siteId, targetDate))
        }
        api.appendSync(drafts, nowMs)
      })
    },

    nextOwedMs () {
      for (const key of throttle.getKeys({ start: ['o', 0], end: ['o', MAX_SEQ], limit: 1 })) return (key as [string, number])[1]
      return undefined
    },

    appendSync (drafts, atMs) {
      if (drafts.length === 0) return
      if (stamp.ms !== atMs) stamp = { ms: atMs, iso: new Date(atMs).toISOString() }
      const at = `","occurred_at":"${stamp.iso}",`
      // Each company's last seq read once per write (a POST's one event costs one read, one put).
      const lasts = new Map<string, number>()
      const counts = new Map<EventType, number>()
      for (const d of drafts) {
        const seq = (lasts.get(d.companyId) ?? lastOf(d.companyId)) + 1
        lasts.set(d.companyId, seq)
        db.putSync([d.companyId, seq], [atMs, `{"id":"${eventId(seq)}","type":"${d.type}${at}${d.fields}}`])
        counts.set(d.type, (counts.get(d.type) ?? 0) + 1)
      }
      for (const [companyId, seq] of lasts) seen.set(companyId, seq)
      store.afterDurable(() => {
        opts.bell?.ring()
        if (opts.written) for (const [type, n] of counts) opts.written(type, n)
      })
    },

    page (companyId, after, limit) {
      const head = headOf(companyId)
      if (after !== undefined && after < head.pruned) {
        const first = [...db.getKeys({ start: [companyId, head.pruned + 1], end: [companyId, MAX_SEQ], limit: 1 })][0] as [string, number] | undefined
        return { kind: 'expired', oldest: first && eventId(first[1]), resume: eventId(head.pruned) }
      }
      const from = after ?? head.pruned
      const events: string[] = []
      let next = from
      for (const { key, value } of db.getRange({ start: [companyId, from + 1], end: [companyId, MAX_SEQ], limit })) {
        events.push(value[1])
        next = (key as [string, number])[1]
      }
      return { kind: 'page', events, next: eventId(next) }
    },

    lastSeq: lastOf,

    nextOf (companyId, after, types, limit) {
      const { pruned } = headOf(companyId)
      if (after < pruned) return { kind: 'expired', resume: pruned }
      let firstAtMs: number | undefined
      let seq = after
      for (const { key, value: [atMs, json] } of db.getRange({ start: [companyId, after + 1], end: [companyId, MAX_SEQ], limit })) {
        seq = (key as [string, number])[1]
        if (types.includes((JSON.parse(json) as { type: EventType }).type)) return { kind: 'event', seq, atMs, json }
        firstAtMs ??= atMs
      }
      return firstAtMs === undefined ? { kind: 'none' } : { kind: 'skip', seq, atMs: firstAtMs }
    },

    firstDueMs (companyId, after, types, limit) {
      const n = api.nextOf(companyId, Math.max(after, headOf(companyId).pruned), types, limit)
      return n.kind === 'event' || n.kind === 'skip' ? n.atMs : undefined
    },

    async prune (nowMs) {
      const cutoff = nowMs - retentionMs
      let removed = 0
      for (const companyId of companiesWithEvents()) {
        for (;;) {
          const expired: number[] = []
          for (const { key, value } of db.getRange({ start: [companyId, 0], end: [companyId, MAX_SEQ], limit: PRUNE_CHUNK })) {
            // In seq order: the first one kept ends the run (a clock stepped back keeps a few more, never fewer).
            if (value[0] >= cutoff) break
            expired.push((key as [string, number])[1])
          }
          if (!expired.length) break
          await store.writeDurable(() => {
            // The last seq given, read before the removal may take the newest event.
            const last = lastOf(companyId)
            for (const seq of expired) db.removeSync([companyId, seq])
            heads.putSync(companyId, { last, pruned: Math.max(headOf(companyId).pruned, expired.at(-1)!) })
          })
          removed += expired.length
          if (expired.length < PRUNE_CHUNK) break
          await new Promise<void>(resolve => setImmediate(resolve))
        }
      }
      // The pace of `realise.modifie`: what was told long ago and owes nothing is forgotten.
      const stale = [...throttle.getRange({ start: ['t'], end: ['t', '\uffff'] })]
        .filter(e => typeof e.value === 'object' && !e.value.owed && e.value.atMs + REALISE_EVERY_MS <= nowMs).map(e => e.key)
      if (stale.length) await store.writeDurable(() => { for (const k of stale) throttle.removeSync(k) })
      return removed
    },
  }
  return api
}

/** A JSON string literal of text epx made (ids, dates, ETags): only `"` and `\` need escaping. */
export function jsonText (s: string): string {
  return `"${s.includes('"') || s.includes('\\') ? s.replace(/["\\]/g, '\\$&') : s}"`
}

/**
 * Who may read a site's Besoins_Agreges: every company whose perimeter holds it. Call the
 * result inside the write that announces (it reads the companies then), once per write.
 */
export function perimeterReaders (store: Store): () => (siteId: string) => readonly string[] {
  const companies = store.db<CompanyRecord>('companies')
  return () => {
    const everySite: string[] = []
    const bySite = new Map<string, string[]>()
    for (const { key, value } of companies.getRange()) {
      if (typeof key !== 'string') continue   // the msgpack shapes live under a symbol key
      if (value.perimeter === 'all') everySite.push(value.id)
      else for (const s of value.perimeter) bySite.set(s, [...bySite.get(s) ?? [], value.id])
    }
    return siteId => {
      const own = bySite.get(siteId)
      return own ? (everySite.length ? [...everySite, ...own] : own) : everySite
    }
  }
}

/** The members of an `instruction.statut` event. */
export function instructionStatusFields (instructionId: string, siteId: string, targetDate: string, status: 'queued' | 'applied' | 'superseded' | 'withdrawn' | 'late', extra = ''): string {
  return `"instruction_id":"${instructionId}","site_id":"${siteId}","target_date":"${targetDate}","status":"${status}"${extra}`
}
