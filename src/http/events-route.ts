/**
 * GET evenements (DECISIONS.md "Events for BSPs", an extension of the contract under the
 * same base path): the caller company's events after `apres`, oldest first, at most
 * `limite`, as `{"evenements": [...], "suivant": ID}`. With `attente` and nothing to give,
 * the answer waits up to that many seconds for one: asleep on the event bell
 * (`store/event-bell.ts`), no timer but its deadline, released by the write of an event
 * (of any company: it reads again, and waits again when none is its own), and at once
 * when the door closes. The events' JSON was made when they were written: a page is their
 * concatenation.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { EpxError } from '../errors.ts'
import { seqOfEventId, type EventPage, type Events } from '../store/events.ts'
import type { EventBell } from '../store/event-bell.ts'
import { EVENTS_PATH, NOSNIFF, type RequestContext, type Route } from './route.ts'

export interface EventsDeps {
  readonly events: Pick<Events, 'page'>
  readonly bell: Pick<EventBell, 'count' | 'wait' | 'releaseAll'>
}

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 1000
export const MAX_WAIT_SECONDS = 30
const PARAMETERS = ['apres', 'limite', 'attente']

interface Query { readonly after: number | undefined; readonly limit: number; readonly waitMs: number }

export function eventsRoute (deps: EventsDeps): Route {
  let closing = false

  const pageOf = (companyId: string, q: Query): Extract<EventPage, { kind: 'page' }> => {
    const page = deps.events.page(companyId, q.after, q.limit)
    if (page.kind === 'expired') {
      throw new EpxError('CURSOR_EXPIRED', [eventIdText(q.after), page.resume], {
        details: { ...(page.oldest === undefined ? {} : { oldest_id: page.oldest }), suivant: page.resume },
      })
    }
    return page
  }

  const serve = async (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<void> => {
    const q = readQuery(ctx.url)
    const companyId = ctx.caller.companyId
    // The bell's count before the read: a ring between the two is not missed.
    let seen = deps.bell.count()
    let page = pageOf(companyId, q)
    if (page.events.length === 0 && q.waitMs > 0) {
      const deadline = performance.now() + q.waitMs
      let gone = false
      const leave = () => { gone = true }
      req.socket.once('close', leave)
      try {
        for (;;) {
          const left = deadline - performance.now()
          if (left <= 0 || closing || gone) break
          const waiting = deps.bell.wait(left, seen)
          const release = () => waiting.release()
          req.socket.once('close', release)
          await waiting.rung
          req.socket.off('close', release)
          if (gone) return   // nobody to answer
          seen = deps.bell.count()
          page = pageOf(companyId, q)
          if (page.events.length) break
        }
      } finally {
        req.socket.off('close', leave)
      }
    }
    const body = `{"evenements":[${page.events.join(',')}],"suivant":"${page.next}"}`
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      'x-content-type-options': NOSNIFF,
    })
    res.end(body)
  }

  return {
    path: EVENTS_PATH,
    door: 'outbound',
    scope: 'outbound:evenements',
    methods: { GET: serve },
    close () {
      // Waiting answers go now, with what there is: the door's grace is not spent on them.
      closing = true
      deps.bell.releaseAll()
    },
  }
}

const eventIdText = (after: number | undefined): string => after === undefined ? '' : String(after)

/** Each parameter at most once, each checked; an unknown one is named (a typo would otherwise read from the oldest event). */
function readQuery (url: URL): Query {
  const q = url.searchParams
  const details: Record<string, string> = {}
  for (const name of new Set(q.keys())) {
    if (!PARAMETERS.includes(name)) details[name] = `unknown parameter; the parameters are ${PARAMETERS.join(', ')}`
    else if (q.getAll(name).length > 1) details[name] = 'must be given once'
  }
  const apres = q.get('apres')
  const after = apres === null ? undefined : seqOfEventId(apres)
  if (apres !== null && after === undefined && !details.apres) details.apres = 'must be an event id, as "id" or "suivant" gave it (digits only)'
  const limit = integer(q.get('limite'), DEFAULT_LIMIT, 1, MAX_LIMIT)
  if (limit === undefined && !details.limite) details.limite = `must be an integer from 1 to ${MAX_LIMIT}`
  const wait = integer(q.get('attente'), 0, 0, MAX_WAIT_SECONDS)
  if (wait === undefined && !details.attente) details.attente = `must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}`
  if (Object.keys(details).length) throw new EpxError('INVALID_QUERY', [Object.keys(details).join(', ')], { details })
  return { after, limit: limit!, waitMs: wait! * 1000 }
}

function integer (text: string | null, fallback: number, min: number, max: number): number | undefined {
  if (text === null) return fallback
  if (!/^\d{1,6}$/.test(text)) return undefined
  const n = Number(text)
  return n >= min && n <= max ? n : undefined
}
