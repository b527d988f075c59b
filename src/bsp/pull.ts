/**
 * Pulling Besoins_Agreges by the book (contract §4.1, §8): per (site_id, target_date)
 * the last ETag and Last-Modified are kept in the output folder and sent back, a file is
 * written only on 200 and only once it passed the schema (write then rename: a reader
 * never sees half a file), a 503, a 429 or a network error is retried within the round after a
 * jittered backoff that honours Retry-After, and a 404 ("not yet") is left for a later
 * round no sooner than its Retry-After.
 * @module
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BspClient } from './client.ts'
import { checkBesoinsAgreges } from './check.ts'
import { backoffMs, type Timing } from './timing.ts'

/** What the folder remembers of a pair: the validators to send back, and emitted_at for audit. */
export interface PairState {
  readonly etag?: string
  readonly lastModified?: string
  readonly emittedAt?: string
}

export type Outcome =
  | { readonly siteId: string; readonly result: 'fetched'; readonly file: string; readonly emittedAt: string }
  | { readonly siteId: string; readonly result: 'unchanged' }
  | { readonly siteId: string; readonly result: 'missing'; readonly retryAfterSecs: number }
  | { readonly siteId: string; readonly result: 'failed'; readonly why: string }

export interface RoundReport {
  readonly targetDate: string
  readonly outcomes: readonly Outcome[]
  readonly counts: Readonly<Record<Outcome['result'], number>>
}

export interface PullOptions {
  readonly client: BspClient
  readonly sites: readonly string[]
  readonly targetDate: string
  /** Where documents and `.epx-bsp-state.json` live. */
  readonly dir: string
  /** Tries of one request on 503, 429 or a network error (default 4). */
  readonly attempts?: number
  readonly timing: Timing
}

export const STATE_FILE = '.epx-bsp-state.json'
/** Contract §8: not more often than every 5 minutes after a 404, when the server does not say. */
const DEFAULT_NOT_PUBLISHED_SECS = 300

/** The file a pair's latest revision is kept in: `<dir>/<target_date>/<site_id>.json`. */
export function documentFile (dir: string, siteId: string, targetDate: string): string {
  return join(dir, targetDate, `${siteId}.json`)
}

/** One round: every site once (with retries for transient faults), sequentially on the one pool. */
export async function pullRound (o: PullOptions): Promise<RoundReport> {
  const state = readState(o.dir)
  const outcomes: Outcome[] = []
  for (const siteId of o.sites) {
    const key = `${siteId}/${o.targetDate}`
    // Validators without the file they stand for would make a 304 keep the folder empty.
    const known = existsSync(documentFile(o.dir, siteId, o.targetDate)) ? state[key] ?? {} : {}
    const outcome = await pullSite(o, siteId, known, next => { state[key] = next })
    outcomes.push(outcome)
    writeState(o.dir, state)
  }
  const counts = { fetched: 0, unchanged: 0, missing: 0, failed: 0 }
  for (const x of outcomes) counts[x.result]++
  return { targetDate: o.targetDate, outcomes, counts }
}

async function pullSite (o: PullOptions, siteId: string, known: PairState, remember: (s: PairState) => void): Promise<Outcome> {
  const attempts = o.attempts ?? 4
  let why = ''
  for (let attempt = 0; attempt < attempts; attempt++) {
    const answer = await o.client.getBesoins({ siteId, targetDate: o.targetDate, etag: known.etag, lastModified: known.lastModified })
    switch (answer.kind) {
      case 'unchanged':
        return { siteId, result: 'unchanged' }
      case 'document': {
        const checked = checkBesoinsAgreges(answer.document)
        if (!checked.ok) return { siteId, result: 'failed', why: `the document does not match Besoins_Agreges v0.3: ${JSON.stringify(checked.details)}` }
        const doc = checked.value
        if (!doc.sites.some(s => s.site_id === siteId) || doc.target_date !== o.targetDate) {
          return { siteId, result: 'failed', why: `the document is for ${doc.target_date}, sites ${doc.sites.map(s => s.site_id).join(', ')}` }
        }
        const file = documentFile(o.dir, siteId, o.targetDate)
        writeAtomically(file, answer.text)
        remember({ etag: answer.etag, lastModified: answer.lastModified, emittedAt: doc.emitted_at })
        return { siteId, result: 'fetched', file, emittedAt: doc.emitted_at }
      }
      case 'retry':
        if (answer.status === 404) return { siteId, result: 'missing', retryAfterSecs: answer.retryAfterSecs ?? DEFAULT_NOT_PUBLISHED_SECS }
        why = `${answer.status}: ${answer.detail}`
        if (attempt + 1 < attempts) await o.timing.sleep(backoffMs(attempt, answer.retryAfterSecs, o.timing.random))
        continue
      case 'unreachable':
        why = `network: ${answer.detail}`
        if (attempt + 1 < attempts) await o.timing.sleep(backoffMs(attempt, undefined, o.timing.random))
        continue
      case 'refused':
        // 400, 401, 403, a wrong path: asking again will not change the answer.
        return { siteId, result: 'failed', why: `${answer.status}: ${answer.code ? `${answer.code}: ` : ''}${answer.detail}` }
    }
  }
  return { siteId, result: 'failed', why: `${why} (after ${attempts} tries)` }
}

function readState (dir: string): Record<string, PairState> {
  try {
    return JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as Record<string, PairState>
  } catch {
    return {}   // first run, or an unreadable state: start afresh (200s rebuild it)
  }
}

function writeState (dir: string, state: Record<string, PairState>): void {
  writeAtomically(join(dir, STATE_FILE), JSON.stringify(state, null, 2) + '\n')
}

function writeAtomically (file: string, text: string): void {
  mkdirSync(join(file, '..'), { recursive: true })
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, text)
  renameSync(tmp, file)
}
