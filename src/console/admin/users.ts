/**
 * Admin page "Utilisateurs": create an account (a generated password, shown once, to be
 * changed at the first login), disable or enable it, reset its password; the client
 * addresses the login throttle has locked, and lifting such a lock. The rules are
 * `epx user`'s (auth/accounts.ts). Every action answers with a redirect to the list
 * (post/redirect/get): a generated password reaches it in the session's flash, shown
 * once; a reload shows the list and repeats nothing.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { addUser, resetPassword, setUserDisabled, usernameProblem } from '../../auth/accounts.ts'
import { isEpxError } from '../../errors.ts'
import { normalizeUsername, type UserRecord } from '../../store/users.ts'
import { fieldText } from '../access.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html, type SafeHtml } from '../html.ts'
import { csrfField, errorPage } from '../layout.ts'
import { setFlash, takeFlash } from '../session.ts'
import { parisHeader, parisText, parisTimeOrDash } from '../time.ts'
import type { Viewer } from '../viewer.ts'
import { auditConsole } from '../audit.ts'

const ADMIN = { config: { access: 'admin' as const } }
const LIST = '/admin/users'

/** What an action leaves for the list it redirects to. */
interface Done { readonly notice?: string; readonly password?: { readonly username: string; readonly value: string } }

function action (viewer: Viewer, u: UserRecord, path: string, label: string, danger = false): SafeHtml {
  return html`<form method="post" action="/admin/users/${u.username}/${path}" class="inline">${csrfField(viewer)}<button type="submit"${danger ? html` class="danger"` : ''}>${label}</button></form>`
}

/** What each confirmed action does, as its confirmation page says it. */
const CONFIRMS = {
  disable: {
    title: 'Désactiver un utilisateur',
    button: 'Désactiver définitivement',
    text: (u: UserRecord) => html`Désactiver <strong>${u.username}</strong> (${roleText(u)}) ? Ses sessions se terminent tout de suite et il ne peut plus se connecter, jusqu'à ce qu'un administrateur le réactive.`,
  },
  'reset-password': {
    title: 'Nouveau mot de passe',
    button: 'Générer un nouveau mot de passe',
    text: (u: UserRecord) => html`Générer un nouveau mot de passe pour <strong>${u.username}</strong> (${roleText(u)}) ? L'ancien cesse de fonctionner, ses sessions se terminent, et le nouveau n'est affiché qu'une fois : il faudra le lui transmettre.`,
  },
} as const

function roleText (u: UserRecord): string {
  return u.admin ? 'administrateur' : `membre de ${u.companyId}`
}

/** The addresses the login throttle has locked (login-throttle.ts), each with its lift button. */
function addressLocks (deps: ConsoleDeps, viewer: Viewer): SafeHtml {
  const locks = deps.loginThrottle.addressLocks(deps.clock.now().getTime())
  return html`<h2>Adresses verrouillées</h2>
<p class="hint">Une adresse qui a fait trop de tentatives de connexion, sur tous comptes confondus, est refusée jusqu'à la fin de sa fenêtre de 15 minutes.
Levez le verrou si elle regroupe des utilisateurs honnêtes (un même accès réseau). Un compte verrouillé se débloque en lui donnant un nouveau mot de passe.
Ces verrous sont ceux de cette instance de la console.</p>
${locks.length === 0
    ? html`<p>Aucune adresse verrouillée.</p>`
    : html`<table class="address-locks"><thead><tr><th scope="col">Adresse</th><th scope="col">Tentatives</th><th scope="col">${parisHeader('Verrouillée jusqu\'à')}</th><th scope="col">Action</th></tr></thead>
<tbody>${locks.map(l => html`<tr><td><code>${l.address}</code></td><td>${l.attempts}</td><td>${parisText(l.untilMs, 'time')}</td>
<td><form method="post" action="${LIST}/address-locks/lift" class="inline">${csrfField(viewer)}<input type="hidden" name="address" value="${l.address}">
<button type="submit">Lever le verrou</button></form></td></tr>`)}</tbody></table>`}`
}

function listPage (reply: FastifyReply, deps: ConsoleDeps, viewer: Viewer, top?: SafeHtml) {
  const users = deps.users.list()
  const companies = deps.companies.list()
  return reply.page({
    title: 'Utilisateurs',
    body: html`${top ?? ''}
<table><thead><tr><th scope="col">Identifiant</th><th scope="col">Rôle</th><th scope="col">État</th><th scope="col">${parisHeader('Créé')}</th>
<th scope="col">${parisHeader('Mot de passe changé')}</th><th scope="col">Actions</th></tr></thead>
<tbody>${users.map(u => html`
<tr><td><code>${u.username}</code></td><td>${roleText(u)}</td>
<td class="state-${u.disabled ? 'disabled' : 'active'}">${u.disabled ? 'désactivé' : 'actif'}</td>
<td>${parisTimeOrDash(u.createdAt, 'minute')}</td><td>${parisTimeOrDash(u.passwordChangedAt, 'minute')}</td>
<td>${u.username === viewer.username ? html`<span class="hint">(vous : <a href="/compte/mot-de-passe">changer votre mot de passe</a>)</span>` : html`${u.disabled ? action(viewer, u, 'enable', 'Réactiver') : html`<a href="/admin/users/${u.username}/disable">Désactiver</a>`}
· <a href="/admin/users/${u.username}/reset-password">Nouveau mot de passe</a>`}</td></tr>`)}</tbody></table>
<h2>Ajouter un utilisateur</h2>
<form method="post" action="/admin/users">${csrfField(viewer)}
<p><label for="username">Identifiant</label><input id="username" name="username" required></p>
<p><label for="role">Rôle</label><select id="role" name="role">
<option value="">Choisir&hellip;</option>
<option value="admin">Administrateur du service</option>
${companies.map(c => html`<option value="company:${c.id}">Membre de ${c.id} (${c.name})</option>`)}
</select></p>
<p class="hint">Un mot de passe est généré et affiché une seule fois ; l'utilisateur choisira le sien à sa première connexion.</p>
<p><button type="submit">Ajouter</button></p>
</form>
${addressLocks(deps, viewer)}`,
  })
}

function doneShown (done: Done): SafeHtml {
  return html`${done.notice ? html`<p class="notice" role="status">${done.notice}</p>` : ''}
${done.password ? html`<div role="status"><p class="notice">Mot de passe de ${done.password.username}, affiché cette seule fois : transmettez-le maintenant.
Il devra le remplacer par le sien à sa première connexion.</p>
<p><label for="new-password">Mot de passe</label></p><input id="new-password" class="secret" readonly value="${done.password.value}"></div>` : ''}`
}

export function usersAdmin (app: FastifyInstance, deps: ConsoleDeps): void {
  app.get(LIST, ADMIN, async (request, reply) => {
    const done = await takeFlash<Done>(request, deps, LIST)
    return listPage(reply, deps, request.viewer!, done && doneShown(done))
  })
  /** The answer to every action that went through: back to the list, `done` shown there once. */
  const backToList = async (request: FastifyRequest, reply: FastifyReply, done: Done) => {
    await setFlash(request, deps, LIST, done)
    return reply.redirect(LIST, 303)
  }

  app.post(`${LIST}/address-locks/lift`, ADMIN, async (request, reply) => {
    const address = fieldText(request.body, 'address')
    const lifted = deps.loginThrottle.liftAddress(address)
    if (lifted) {
      deps.log.info({ address, by: request.viewer!.username }, 'console: address lock lifted')
      auditConsole(deps, request.viewer!.username, 'user.unlocked', address, 'ok', { lock: 'address' })
    }
    return backToList(request, reply, { notice: lifted ? `Le verrou de l'adresse ${address} est levé.` : `L'adresse ${address} n'était plus verrouillée.` })
  })

  app.post('/admin/users', ADMIN, async (request, reply) => {
    const role = fieldText(request.body, 'role')
    const username = normalizeUsername(fieldText(request.body, 'username'))
    const admin = role === 'admin'
    const companyId = role.startsWith('company:') ? role.slice('company:'.length) : null
    const refused = (status: number, text: string) => listPage(reply.code(status), deps, request.viewer!, html`<p class="error" role="alert">${text}</p>`)
    if (usernameProblem(username)) {
      return refused(400, `Identifiant « ${username} » invalide : de 2 à 64 lettres minuscules, chiffres, « . », « _ », « - » ou « @ », en commençant par une lettre ou un chiffre.`)
    }
    if (!admin && companyId === null) return refused(400, 'Choisissez un rôle.')
    if (companyId !== null && !deps.companies.get(companyId)) return refused(400, `L'entreprise ${companyId} n'existe pas.`)
    if (deps.users.get(username)) return refused(409, `L'utilisateur ${username} existe déjà : choisissez un autre identifiant.`)
    try {
      const { record, password } = await addUser(deps.store, { username, admin, companyId, mustChangePassword: true }, deps.clock.now().getTime())
      deps.log.info({ user: record.username, by: request.viewer!.username }, 'console: user added')
      auditConsole(deps, request.viewer!.username, 'user.changed', record.username, 'ok', { change: 'added', admin: record.admin, companyId: record.companyId })
      return await backToList(request, reply, { notice: `${record.username} est ajouté.`, password: { username: record.username, value: password } })
    } catch (err) {
      if (!isEpxError(err) || err.code === 'NO_STORE') throw err
      // Checked above; a race with `epx user add` lands here.
      return err.code === 'EPX_CONFLICT' ? refused(409, `L'utilisateur ${username} existe déjà : choisissez un autre identifiant.`) : refused(400, "L'utilisateur n'a pas pu être ajouté : vérifiez l'identifiant et le rôle.")
    }
  })

  const userOf = (request: { params: unknown }, viewer: Viewer) => {
    const u = deps.users.get((request.params as { name: string }).name)
    // An admin does not lock itself out from here (the CLI can).
    return u && u.username !== viewer.username ? u : undefined
  }
  const notFound = (reply: FastifyReply) => errorPage(reply, 404, 'Utilisateur introuvable', "Cet utilisateur n'existe pas (ou c'est vous : utilisez la ligne de commande).")

  for (const path of ['disable', 'reset-password'] as const) {
    app.get(`/admin/users/:name/${path}`, ADMIN, async (request, reply) => {
      const viewer = request.viewer!
      const u = userOf(request, viewer)
      if (!u) return notFound(reply)
      const c = CONFIRMS[path]
      return reply.page({
        title: c.title,
        body: html`<p>${c.text(u)}</p>
<form method="post" action="/admin/users/${u.username}/${path}">${csrfField(viewer)}
<button type="submit" class="danger">${c.button}</button> <a href="/admin/users">Annuler</a>
</form>`,
      })
    })
  }

  for (const [path, disabled] of [['disable', true], ['enable', false]] as const) {
    app.post(`/admin/users/:name/${path}`, ADMIN, async (request, reply) => {
      const u = userOf(request, request.viewer!)
      if (!u) return notFound(reply)
      await setUserDisabled(deps.store, u.username, disabled)
      deps.log.info({ user: u.username, disabled, by: request.viewer!.username }, 'console: user state')
      auditConsole(deps, request.viewer!.username, 'user.changed', u.username, 'ok', { change: disabled ? 'disabled' : 'enabled' })
      return backToList(request, reply, { notice: `${u.username} est ${disabled ? 'désactivé : ses sessions sont terminées' : 'réactivé'}.` })
    })
  }

  app.post('/admin/users/:name/reset-password', ADMIN, async (request, reply) => {
    const u = userOf(request, request.viewer!)
    if (!u) return notFound(reply)
    const { record, password } = await resetPassword(deps.store, u.username, deps.clock.now().getTime())
    deps.log.info({ user: u.username, by: request.viewer!.username }, 'console: password reset')
    auditConsole(deps, request.viewer!.username, 'user.changed', u.username, 'ok', { change: 'password reset' })
    return backToList(request, reply, { password: { username: record.username, value: password } })
  })
}
