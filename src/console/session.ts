/**
 * The session layer (DECISIONS.md "Web console"): a 256-bit random id in a
 * `__Host-` cookie (Secure, HttpOnly, SameSite=Strict, Path=/), stored only as its
 * SHA-256; idle and absolute expiry; a new id at each login, deleted at logout. A
 * session also ends as soon as its user is disabled or its company suspended: checked
 * on every request, so `epx user disable` or `epx company suspend` from another process
 * takes effect on the next click.
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { SessionRecord } from '../store/sessions.ts'
import type { UserRecord } from '../store/users.ts'
import type { ConsoleDeps } from './deps.ts'
import { errorPage } from './layout.ts'
import type { Viewer } from './viewer.ts'

export const SESSION_COOKIE = '__Host-epx_session'
/** A session's last-seen time is written at most this often (a write per click is not worth it). */
const TOUCH_EVERY_MS = 60_000

/** Who may open a route: `public` (login page, assets), any logged-in user (default), or admins only. */
export type Access = 'public' | 'user' | 'admin'
declare module 'fastify' {
  interface FastifyContextConfig { access?: Access }
}

const idHash = (id: string) => createHash('sha256').update(id).digest('hex')

function cookieOptions (maxAgeSeconds?: number) {
  return { path: '/', secure: true, httpOnly: true, sameSite: 'strict' as const, ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }) }
}

function expired (s: SessionRecord, deps: ConsoleDeps, nowMs: number): boolean {
  return nowMs - s.createdAtMs >= deps.session.maxMs || nowMs - s.lastSeenAtMs >= deps.session.idleMs
}

/** Whether the session may go on, given its user as the store has it now. */
function alive (s: SessionRecord, user: UserRecord | undefined, deps: ConsoleDeps, nowMs: number): user is UserRecord {
  if (expired(s, deps, nowMs)) return false
  if (!user || user.disabled) return false
  if (user.admin) return true
  return user.companyId !== null && deps.companies.get(user.companyId)?.status === 'active'
}

async function viewerOf (request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps): Promise<Viewer | null> {
  const id = request.cookies[SESSION_COOKIE]
  if (!id) return null
  const key = idHash(id)
  const s = deps.sessions.get(key)
  const nowMs = deps.clock.now().getTime()
  const user = s && deps.users.get(s.username)
  if (!s || !alive(s, user, deps, nowMs)) {
    if (s) await deps.sessions.delete(key)
    reply.clearCookie(SESSION_COOKIE, cookieOptions())
    return null
  }
  if (nowMs - s.lastSeenAtMs >= TOUCH_EVERY_MS) {
    // Best effort: a lost last-seen time only shortens the idle window by a minute. A
    // rewrite of the record as it is then, so a flash taken meanwhile stays taken.
    deps.sessions.update(key, r => ({ ...r, lastSeenAtMs: nowMs })).catch(() => {})
  }
  return {
    username: user.username, admin: user.admin, companyId: user.admin ? null : user.companyId, csrfToken: s.csrfToken,
    ...(user.mustChangePassword ? { mustChangePassword: true } : {}),
  }
}

/**
 * Leaves `data` for the page the form redirects to (post/redirect/get): kept in the
 * session record, server-side, until that page takes it; never in the URL.
 */
export async function setFlash (request: FastifyRequest, deps: ConsoleDeps, key: string, data: unknown): Promise<void> {
  const id = request.cookies[SESSION_COOKIE]
  if (id) await deps.sessions.update(idHash(id), s => ({ ...s, flash: { key, data } }))
}

/** The flash left for `page`, deleted as it is read: a reload of that page finds none. */
export async function takeFlash<T> (request: FastifyRequest, deps: ConsoleDeps, page: string): Promise<T | undefined> {
  const id = request.cookies[SESSION_COOKIE]
  if (!id) return undefined
  const key = idHash(id)
  // Most visits find none: a read, not a write, tells.
  if (deps.sessions.get(key)?.flash?.key !== page) return undefined
  let taken: T | undefined
  await deps.sessions.update(key, s => {
    if (s.flash?.key !== page) return undefined
    taken = s.flash.data as T
    const { flash: _, ...rest } = s
    return rest
  })
  return taken
}

/** Starts a session for `user` (a fresh id, whatever cookie came in) and sets its cookie; `flash`: for the page it goes to next. */
export async function startSession (
  request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps, user: UserRecord, flash?: SessionRecord['flash'],
): Promise<void> {
  await endSession(request, reply, deps)
  const id = randomBytes(32).toString('base64url')
  const nowMs = deps.clock.now().getTime()
  // Sessions nobody came back to would stay in the store forever: each login sweeps them.
  await deps.sessions.deleteWhere(s => expired(s, deps, nowMs))
  await deps.sessions.put(idHash(id), {
    username: user.username, csrfToken: randomBytes(32).toString('base64url'), createdAtMs: nowMs, lastSeenAtMs: nowMs, ...(flash ? { flash } : {}),
  })
  reply.setCookie(SESSION_COOKIE, id, cookieOptions(Math.floor(deps.session.maxMs / 1000)))
}

/** Deletes the request's session, if any, and clears its cookie. */
export async function endSession (request: FastifyRequest, reply: FastifyReply, deps: ConsoleDeps): Promise<void> {
  const id = request.cookies[SESSION_COOKIE]
  if (id) await deps.sessions.delete(idHash(id))
  reply.clearCookie(SESSION_COOKIE, cookieOptions())
}

/**
 * A state-changing request must come from the console's own pages: its `Origin` is
 * this console, or (a browser that sends none) `Sec-Fetch-Site` says same-origin.
 * Neither header: not a browser form of ours, refused.
 */
export function foreignOrigin (request: FastifyRequest): string | undefined {
  const origin = request.headers.origin
  const site = request.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site: ${String(site)}`
  if (origin !== undefined) return origin === `https://${request.headers.host ?? ''}` ? undefined : `Origin: ${origin}`
  return site === undefined ? 'no Origin nor Sec-Fetch-Site header' : undefined
}

function sameSecret (a: unknown, b: string): boolean {
  if (typeof a !== 'string') return false
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** The password path, here so the session layer need not import the page (account.ts imports this module). */
export const ACCOUNT_PASSWORD_PATH = '/compte/mot-de-passe'
/** What a user whose password must change may still open. */
const MAY_WAIT_FOR_PASSWORD = new Set([ACCOUNT_PASSWORD_PATH, '/logout'])

/** The CSS and JS files (@fastify/static): public, and no session work for them. */
const isAsset = (request: FastifyRequest) => request.url.startsWith('/assets/')

/** The hooks: who is looking (every request), then access, origin and CSRF checks before any handler. */
export function installSessions (app: FastifyInstance, deps: ConsoleDeps): void {
  app.decorateRequest('viewer', null)
  app.addHook('onRequest', async (request, reply) => {
    // A page reads what another thread of this process has just committed (a suspension
    // through the host's store, a revocation: store/environment.ts), from a snapshot taken here.
    deps.store.fresh()
    request.viewer = isAsset(request) ? null : await viewerOf(request, reply, deps)
  })
  app.addHook('preHandler', async (request, reply) => {
    const access = isAsset(request) ? 'public' : request.routeOptions.config.access ?? 'user'
    const changing = request.method !== 'GET' && request.method !== 'HEAD'
    if (changing && foreignOrigin(request)) {
      return errorPage(reply, 403, 'Requête refusée', "Cette requête ne vient pas d'une page de la console : rien n'a été modifié.")
    }
    if (access === 'public') return
    const viewer = request.viewer
    if (!viewer) {
      const next = request.method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : ''
      return reply.redirect(`/login${next}`, 303)
    }
    // A password someone else generated is changed before anything else is done (docs/console.md).
    if (viewer.mustChangePassword && !MAY_WAIT_FOR_PASSWORD.has(request.routeOptions.url ?? '')) {
      return reply.redirect(ACCOUNT_PASSWORD_PATH, 303)
    }
    if (access === 'admin' && !viewer.admin) {
      return errorPage(reply, 403, 'Accès refusé', 'Cette page est réservée aux administrateurs du service.')
    }
    if (changing && !sameSecret((request.body as Record<string, unknown> | undefined)?._csrf, viewer.csrfToken)) {
      return errorPage(reply, 403, 'Requête refusée', "Le formulaire a expiré ou n'est pas valide : rechargez la page et recommencez. Rien n'a été modifié.")
    }
  })
}
