/**
 * `/login` and `/logout`. The throttle is asked before any hashing; an unknown user
 * costs one hash too, against a fixed dummy, so timing does not tell who exists.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { hashPassword, verifyPassword } from '../auth/password.ts'
import { normalizeUsername } from '../store/users.ts'
import type { ConsoleDeps } from './deps.ts'
import { html } from './html.ts'
import type { Lock, LoginThrottle } from './login-throttle.ts'
import { parisText } from './time.ts'
import { endSession, startSession } from './session.ts'
import { auditConsole } from './audit.ts'

/** Longer than any address of the console's own pages with their query. */
const NEXT_MAX = 2048

/**
 * Where to go after login: a plain path of this console, or `/`. A single leading `/`
 * (never `//host` nor `/\\host`, which browsers read as another host), no backslash,
 * and printable ASCII only: browsers drop tabs and newlines from a URL (WHATWG URL
 * "remove all ASCII tab or newline"), so `/\t/evil.example` would become
 * `//evil.example`; and a `Location` header carries no raw non-ASCII byte (RFC 9110 §5.5),
 * so such a `next` is refused here rather than failing the answer.
 */
export function safeNext (next: unknown): string {
  return typeof next === 'string' && next.length <= NEXT_MAX && /^\/(?![/\\])[\x21-\x7e]*$/.test(next) && !next.includes('\\') ? next : '/'
}

/** What a throttled attempt is told: what is locked (this account, or this address), until when, and who can lift it. */
export function lockedText (lock: Lock, address: string): string {
  const minutes = Math.ceil(lock.seconds / 60)
  const until = `jusqu'à ${parisText(lock.untilMs, 'time')} (heure de Paris), dans ${minutes} minute${minutes > 1 ? 's' : ''}`
  return lock.what === 'account'
    ? `Trop de tentatives de connexion sur ce compte : il est verrouillé ${until}, depuis toute adresse. Un administrateur peut le débloquer en lui donnant un nouveau mot de passe.`
    : `Trop de tentatives de connexion depuis votre adresse (${address}) : elle est verrouillée ${until}, pour tous les comptes. Un administrateur peut lever ce verrou (page Utilisateurs).`
}

function loginForm (next: string, username = '', problem?: string, notice?: string) {
  return html`
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<form method="post" action="/login" class="login">
  <input type="hidden" name="next" value="${next}">
  <p><label for="username">Identifiant</label>
  <input id="username" name="username" autocomplete="username" required value="${username}"${username ? '' : html` autofocus`}></p>
  <p><label for="password">Mot de passe</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required${username ? html` autofocus` : ''}></p>
  <p><button type="submit">Se connecter</button></p>
</form>`
}

export function loginRoutes (app: FastifyInstance, deps: ConsoleDeps, throttle: LoginThrottle): void {
  const dummyHash = hashPassword('not a password of anyone, only a timing twin')

  app.get('/login', { config: { access: 'public' } }, async (request, reply) => {
    if (request.viewer) return reply.redirect('/', 303)
    const query = request.query as Record<string, unknown>
    const next = safeNext(query.next)
    const notice = query.logged_out !== undefined ? 'Vous êtes déconnecté.' : undefined
    return reply.page({ title: 'Connexion', body: loginForm(next, '', undefined, notice) })
  })

  app.post('/login', { config: { access: 'public' } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const username = normalizeUsername(typeof body.username === 'string' ? body.username : '')
    const password = typeof body.password === 'string' ? body.password : ''
    const next = safeNext(body.next)
    const known = username ? deps.users.get(username) : undefined
    const lock = throttle.attempt(username, request.ip, deps.clock.now().getTime(), known?.passwordChangedAt)
    if (lock) {
      return reply.code(429).header('Retry-After', String(lock.seconds)).page({ title: 'Connexion', body: loginForm(next, username, lockedText(lock, request.ip)) })
    }
    const user = known
    const ok = await verifyPassword(password, user?.passwordHash ?? await dummyHash)
    if (!ok || !user || user.disabled) {
      deps.log.info({ username, address: request.ip }, 'console login refused')
      auditConsole(deps, username || '(none)', 'user.login-failed', username || '(none)', 'refused 401', { address: request.ip })
      return reply.code(401).page({ title: 'Connexion', body: loginForm(next, username, 'Identifiant ou mot de passe incorrect.') })
    }
    if (!user.admin && deps.companies.get(user.companyId ?? '')?.status !== 'active') {
      return reply.code(403).page({ title: 'Connexion', body: loginForm(next, username, 'Votre entreprise est suspendue : contactez l\'exploitant du service.') })
    }
    throttle.succeeded(username, request.ip)
    await startSession(request, reply, deps, user)
    deps.log.info({ username }, 'console login')
    auditConsole(deps, user.username, 'user.login', user.username, 'ok', { address: request.ip })
    return reply.redirect(next, 303)
  })

  app.post('/logout', async (request, reply) => {
    if (request.viewer) auditConsole(deps, request.viewer.username, 'user.logout', request.viewer.username)
    await endSession(request, reply, deps)
    return reply.redirect('/login?logged_out=1', 303)
  })
}
