/**
 * "Mot de passe": a logged-in user changes its own password (the current one, the new
 * one twice). Its other sessions end, as an admin's reset ends them all; this browser
 * goes on with a new session.
 * Attempts count against the login throttle of the account, so a stolen session cannot
 * try current passwords faster than the login form allows.
 * @module
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import { hashPassword, verifyPassword } from '../auth/password.ts'
import type { ConsoleDeps } from './deps.ts'
import { html } from './html.ts'
import { csrfField } from './layout.ts'
import type { LoginThrottle } from './login-throttle.ts'
import { lockedText } from './login.ts'
import { ACCOUNT_PASSWORD_PATH, startSession, takeFlash } from './session.ts'
import type { Viewer } from './viewer.ts'
import { auditConsole } from './audit.ts'
import { PASSWORD_RULE_FR, passwordProblemFr } from './password-rules.ts'


function form (reply: FastifyReply, viewer: Viewer, problem?: string) {
  return reply.page({
    title: 'Changer mon mot de passe',
    body: html`
${viewer.mustChangePassword ? html`<p class="warning" role="alert">Votre mot de passe a été généré par un administrateur : choisissez le vôtre pour continuer.</p>` : ''}
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
<form method="post" action="${ACCOUNT_PASSWORD_PATH}" class="login">${csrfField(viewer)}
<input type="text" name="username" autocomplete="username" value="${viewer.username}" hidden>
<p><label for="current">Mot de passe actuel</label>
<input id="current" name="current" type="password" autocomplete="current-password" required autofocus></p>
<p><label for="new">Nouveau mot de passe</label>
<input id="new" name="new" type="password" autocomplete="new-password" required minlength="12" maxlength="256" aria-describedby="new-hint">
<span id="new-hint" class="hint">${PASSWORD_RULE_FR}</span></p>
<p><label for="confirm">Nouveau mot de passe, une seconde fois</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required></p>
<p class="hint">Vos autres sessions (autres navigateurs, autres appareils) seront fermées.</p>
<p><button type="submit">Changer le mot de passe</button></p>
</form>`,
  })
}

export function accountRoutes (app: FastifyInstance, deps: ConsoleDeps, throttle: LoginThrottle): void {
  app.get(ACCOUNT_PASSWORD_PATH, async (request, reply) => {
    if (await takeFlash(request, deps, ACCOUNT_PASSWORD_PATH)) {
      return reply.page({
        title: 'Changer mon mot de passe',
        body: html`<p class="notice" role="status">Mot de passe changé. Vos autres sessions sont fermées ; celle-ci continue.</p>
<p><a href="/">Retour à l'accueil</a></p>`,
      })
    }
    return form(reply, request.viewer!)
  })

  app.post(ACCOUNT_PASSWORD_PATH, async (request, reply) => {
    const viewer = request.viewer!
    const body = (request.body ?? {}) as Record<string, unknown>
    // Passwords are taken as typed (no trim: a space may be part of one).
    const text = (name: string) => typeof body[name] === 'string' ? body[name] as string : ''
    const current = text('current')
    const next = text('new')
    const confirm = text('confirm')
    const user = deps.users.get(viewer.username)
    if (!user) return form(reply.code(400), viewer, 'Compte introuvable.')
    const lock = throttle.attempt(user.username, request.ip, deps.clock.now().getTime(), user.passwordChangedAt)
    if (lock) return form(reply.code(429).header('Retry-After', String(lock.seconds)), viewer, lockedText(lock, request.ip))
    if (!await verifyPassword(current, user.passwordHash)) {
      auditConsole(deps, viewer.username, 'user.changed', viewer.username, 'refused 400', { change: 'password change', reason: 'wrong current password' })
      return form(reply.code(400), viewer, 'Le mot de passe actuel est incorrect : rien n\'a été changé.')
    }
    throttle.succeeded(user.username, request.ip)
    const weak = passwordProblemFr(next, user.username)
    if (weak) return form(reply.code(400), viewer, weak)
    if (next !== confirm) return form(reply.code(400), viewer, 'Les deux saisies du nouveau mot de passe diffèrent : rien n\'a été changé.')
    if (next === current) return form(reply.code(400), viewer, 'Le nouveau mot de passe est identique à l\'actuel.')
    const passwordHash = await hashPassword(next)
    const changed = await deps.users.update(user.username, u => ({ ...u, passwordHash, passwordChangedAt: deps.clock.now().toISOString(), mustChangePassword: false }))
    // Every session of the user ends; this browser gets a new one (a new id, as at login),
    // and the page it is sent to says the password changed (post/redirect/get: a reload changes nothing).
    await deps.sessions.deleteWhere(s => s.username === user.username)
    await startSession(request, reply, deps, changed, { key: ACCOUNT_PASSWORD_PATH, data: true })
    deps.log.info({ user: user.username }, 'console: password changed')
    auditConsole(deps, viewer.username, 'user.changed', viewer.username, 'ok', { change: 'password changed' })
    return reply.redirect(ACCOUNT_PASSWORD_PATH, 303)
  })
}
