/**
 * Admin page "Entreprises": create, suspend and resume, certificate
 * subject binding, perimeter, limits (`company-limits.ts`). The rules are `epx company`'s (auth/company-rules.ts,
 * store/companies.ts). Suspending a company also ends its members' sessions. Every change
 * answers with a redirect (post/redirect/get), so a reload never repeats it.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { tokenState } from '../../store/tokens.ts'
import { isEpxError } from '../../errors.ts'
import { pinsOf, type CompanyRecord } from '../../store/companies.ts'
import type { TenureChange } from '../../store/tenure.ts'
import type { AuditActor } from '../../store/audit.ts'
import { fieldText } from '../access.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html, type SafeHtml } from '../html.ts'
import { csrfField, errorPage } from '../layout.ts'
import { parisHeader, parisTimeOrDash } from '../time.ts'
import type { Viewer } from '../viewer.ts'
import { auditConsole } from '../audit.ts'
import { setFlash, takeFlash } from '../session.ts'
import { companyIdProblemFr, readCertSubjectFr, readPerimeterFr, unmanagedWarning } from './wording.ts'
import { limitsRoute, limitsSection } from './company-limits.ts'

const ADMIN = { config: { access: 'admin' as const } }
const STATUS_LABELS = { active: 'active', suspended: 'suspendue' } as const

function perimeterText (p: CompanyRecord['perimeter']): string {
  return p === 'all' ? 'tous les sites' : `${p.length} site${p.length > 1 ? 's' : ''}`
}

function listPage (reply: FastifyReply, deps: ConsoleDeps, viewer: Viewer, problem?: string, form: Record<string, string> = {}) {
  const companies = deps.companies.list()
  return reply.page({
    title: 'Entreprises',
    body: html`
<table><thead><tr><th scope="col">Identifiant</th><th scope="col">Nom</th><th scope="col">État</th><th scope="col">Périmètre</th>
<th scope="col">Sujet du certificat</th><th scope="col">${parisHeader('Créée')}</th></tr></thead>
<tbody>${companies.map(c => html`
<tr><td><a href="/admin/companies/${c.id}">${c.id}</a></td><td>${c.name}</td><td class="state-${c.status}">${STATUS_LABELS[c.status]}</td>
<td>${perimeterText(c.perimeter)}</td><td><code>${c.certSubject}</code></td><td>${parisTimeOrDash(c.createdAt, 'slot')}</td></tr>`)}</tbody></table>
<h2>Ajouter une entreprise</h2>
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
<form method="post" action="/admin/companies">${csrfField(viewer)}
<p><label for="id">Identifiant</label><input id="id" name="id" required value="${form.id ?? ''}" aria-describedby="id-hint">
<span id="id-hint" class="hint">2 à 63 caractères : minuscules, chiffres ou « - ».</span></p>
<p><label for="name">Nom</label><input id="name" name="name" required value="${form.name ?? ''}"></p>
<p><label for="certSubject">Sujet du certificat</label><input id="certSubject" name="certSubject" value="${form.certSubject ?? ''}" aria-describedby="subject-hint">
<span id="subject-hint" class="hint">Par défaut CN=&lt;identifiant&gt;,O=&lt;nom&gt;.</span></p>
<p><label for="sites">Périmètre</label><input id="sites" name="sites" value="${form.sites ?? 'all'}" aria-describedby="sites-hint">
<span id="sites-hint" class="hint">« all » ou des identifiants PRM séparés par des virgules.</span></p>
<p><button type="submit">Ajouter</button></p>
</form>`,
  })
}

/** Suspending cuts a BSP off the API at once: the button asks first, as a token's revocation does. */
function confirmSuspension (reply: FastifyReply, deps: ConsoleDeps, viewer: Viewer, c: CompanyRecord) {
  const members = deps.users.list().filter(u => u.companyId === c.id).length
  return reply.page({
    title: "Suspendre l'entreprise",
    body: html`<p>Suspendre <strong>${c.name}</strong> (<code>${c.id}</code>) ? Ses appels à l'API seront refusés (403 COMPANY_SUSPENDED) dès la prochaine requête,
et ${members === 0 ? "elle n'a aucun utilisateur de la console" : members === 1 ? 'la session de son utilisateur sera fermée' : `les sessions de ses ${members} utilisateurs seront fermées`}. Ses jetons sont conservés ; la réactivation les rend de nouveau utilisables.</p>
<form method="post" action="/admin/companies/${c.id}/status">${csrfField(viewer)}<input type="hidden" name="status" value="suspended"><input type="hidden" name="confirmed" value="yes">
<button type="submit" class="danger">Confirmer la suspension</button> <a href="/admin/companies/${c.id}">Annuler</a></form>`,
  })
}

function detailPage (reply: FastifyReply, deps: ConsoleDeps, viewer: Viewer, c: CompanyRecord, notice?: string, problem?: string, warning?: string) {
  const nowMs = deps.clock.now().getTime()
  const tokens = deps.tokens.list(c.id)
  const live = tokens.filter(t => tokenState(t, nowMs) === 'active').length
  const members = deps.users.list().filter(u => u.companyId === c.id)
  const hooks = deps.webhooks.endpoints.list(c.id)
  const failing = hooks.filter(e => e.failingSince).length
  const pins = pinsOf(c)
  const form = (action: string, inner: SafeHtml) => html`<form method="post" action="/admin/companies/${c.id}/${action}">${csrfField(viewer)}${inner}</form>`
  return reply.page({
    title: `Entreprise ${c.id}`,
    body: html`
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
${warning ? html`<p class="warning" role="alert">${warning}</p>` : ''}
<table><tbody>
<tr><th scope="row">Nom</th><td>${c.name}</td></tr>
<tr><th scope="row">État</th><td class="state-${c.status}">${STATUS_LABELS[c.status]}</td></tr>
<tr><th scope="row">Sujet du certificat</th><td><code>${c.certSubject}</code></td></tr>
<tr><th scope="row">Empreintes épinglées</th><td>${pins.length ? pins.map(p => html`<code>${p}</code><br>`) : 'aucune (le sujet seul décide)'}</td></tr>
<tr><th scope="row">Périmètre</th><td>${c.perimeter === 'all' ? 'tous les sites' : c.perimeter.join(', ')}</td></tr>
<tr><th scope="row">Jetons</th><td>${tokens.length === 0 ? 'aucun' : `${live} utilisable${live > 1 ? 's' : ''} sur ${tokens.length}`} (<a href="/tokens?company=${c.id}">voir</a>)</td></tr>
<tr><th scope="row">Webhooks</th><td>${hooks.length === 0 ? 'aucun' : `${hooks.length}${failing ? `, dont ${failing} en échec` : ''}`} (<a href="/webhooks?company=${c.id}">voir</a>)</td></tr>
<tr><th scope="row">Utilisateurs</th><td>${members.length ? members.map(u => u.username).join(', ') : 'aucun'}</td></tr>
<tr><th scope="row">Créée</th><td>${parisTimeOrDash(c.createdAt)}</td></tr>
</tbody></table>
<h2>${c.status === 'active' ? 'Suspendre' : 'Réactiver'}</h2>
${form('status', html`<input type="hidden" name="status" value="${c.status === 'active' ? 'suspended' : 'active'}">
<p class="hint">${c.status === 'active'
    ? "Ses appels à l'API sont refusés (403 COMPANY_SUSPENDED) dès la prochaine requête, et les sessions de ses utilisateurs se terminent. Ses jetons sont conservés."
    : 'Ses jetons valides fonctionnent de nouveau dès la prochaine requête.'}</p>
<p><button type="submit"${c.status === 'active' ? html` class="danger"` : ''}>${c.status === 'active' ? "Suspendre l'entreprise" : "Réactiver l'entreprise"}</button></p>`)}
<h2>Certificat client</h2>
${form('subject', html`<p><label for="certSubject">Sujet lié</label><input id="certSubject" name="certSubject" required value="${c.certSubject}" size="50"></p>
<p><button type="submit">Enregistrer le sujet</button></p>`)}
<h2>Périmètre</h2>
${form('perimeter', html`<p><label for="sites">Sites</label><textarea id="sites" name="sites" rows="3" cols="60" aria-describedby="sites-hint">${c.perimeter === 'all' ? 'all' : c.perimeter.join(', ')}</textarea>
<span id="sites-hint" class="hint">« all » ou des identifiants PRM séparés par des virgules.</span></p>
<p><button type="submit">Enregistrer le périmètre</button></p>`)}
${limitsSection(deps, viewer, c)}
${historySection(deps.tenure.historyOf(c.id))}
<p><a href="/admin/companies">Toutes les entreprises</a></p>`,
  })
}

const CHANGE_LABELS: Record<TenureChange['kind'], string> = {
  added: 'ajoutée', perimeter: 'périmètre modifié', suspended: 'suspendue', resumed: 'réactivée', recorded: 'état à la création (avant l\'historique)',
}

function actorText (a: AuditActor): string {
  switch (a.kind) {
    case 'cli': return `epx (${a.user})`
    case 'console': return `console (${a.user})`
    case 'company': return `entreprise ${a.companyId}`
    case 'schedule': return 'planification'
    case 'host': return 'epx'
  }
}

/** DECISIONS.md "Tenure: who holds a site, and when": every change of the perimeter or the status, newest first. */
function historySection (changes: readonly TenureChange[]): SafeHtml {
  return html`<h2>Historique du périmètre</h2>
<table class="tenure-history"><thead><tr><th scope="col">${parisHeader('Quand')}</th><th scope="col">Changement</th><th scope="col">État</th><th scope="col">Périmètre</th><th scope="col">Par</th></tr></thead>
<tbody>${[...changes].reverse().map(h => html`
<tr><td>${parisTimeOrDash(h.at, 'slot')}</td><td>${CHANGE_LABELS[h.kind]}</td><td class="state-${h.status}">${STATUS_LABELS[h.status]}</td>
<td>${h.perimeter === 'all' ? 'tous les sites' : h.perimeter.join(', ') || 'aucun site'}</td><td>${actorText(h.actor)}</td></tr>`)}</tbody></table>`
}

/** The other company of a refused overlap (store/companies.ts), or undefined for any other error. */
function overlapping (err: unknown): string | undefined {
  return isEpxError(err) && err.code === 'EPX_CONFLICT' && err.details?.shared !== undefined ? err.details.company : undefined
}

/** DECISIONS.md "Authentication and tenancy", as the console says it. */
function onePerSite (other: string): string {
  return `le périmètre partagerait des sites avec celui de l'entreprise active ${other} (un seul BSP par site : sinon le programme de l'une remplacerait celui de l'autre). ` +
    `Réduisez d'abord le périmètre de ${other}, ou suspendez-la.`
}

export function companiesAdmin (app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/admin/companies', ADMIN, async (request, reply) => listPage(reply, deps, request.viewer!))

  app.post('/admin/companies', ADMIN, async (request, reply) => {
    const form = { id: fieldText(request.body, 'id'), name: fieldText(request.body, 'name'), certSubject: fieldText(request.body, 'certSubject'), sites: fieldText(request.body, 'sites') }
    const subject = readCertSubjectFr(form.certSubject || undefined, form.id, form.name)
    const perimeter = readPerimeterFr(form.sites ? [form.sites] : [])
    const problem = companyIdProblemFr(form.id) ?? (form.name ? undefined : 'Le nom est obligatoire.') ??
      ('problem' in subject ? subject.problem : undefined) ??
      ('problem' in perimeter ? perimeter.problem : undefined)
    if (problem || 'problem' in subject || 'problem' in perimeter) return listPage(reply.code(400), deps, request.viewer!, problem, form)
    if (deps.companies.get(form.id)) return listPage(reply.code(409), deps, request.viewer!, `L'entreprise ${form.id} existe déjà.`, form)
    const record: CompanyRecord = {
      id: form.id, name: form.name, status: 'active', certSubject: subject.subject, perimeter: perimeter.perimeter, createdAt: deps.clock.now().toISOString(),
    }
    try {
      await deps.companies.add(record, { actor: { kind: 'console', user: request.viewer!.username } })
    } catch (err) {
      const other = overlapping(err)
      if (!other) throw err
      return listPage(reply.code(409), deps, request.viewer!, onePerSite(other), form)
    }
    deps.log.info({ company: record.id, by: request.viewer!.username }, 'console: company added')
    auditConsole(deps, request.viewer!.username, 'company.created', record.id, 'ok', { certSubject: record.certSubject, perimeter: record.perimeter })
    const warning = unmanagedWarning(record.perimeter, await deps.sites())
    return reply.redirect(`/admin/companies/${record.id}${warning ? '?unmanaged=1' : ''}`, 303)
  })

  const companyOf = (request: { params: unknown }) => deps.companies.get((request.params as { id: string }).id)
  const notFound = (reply: FastifyReply) => errorPage(reply, 404, 'Entreprise introuvable', "Cette entreprise n'existe pas.")

  /**
   * A change that went through answers with a redirect to the company's page, which says
   * it once (post/redirect/get: a reload shows the page and changes nothing).
   */
  const saved = async (request: FastifyRequest, reply: FastifyReply, c: CompanyRecord, notice: string, warning?: string) => {
    await setFlash(request, deps, `/admin/companies/${c.id}`, { notice, ...(warning ? { warning } : {}) })
    return reply.redirect(`/admin/companies/${c.id}`, 303)
  }

  app.get('/admin/companies/:id', ADMIN, async (request, reply) => {
    const c = companyOf(request)
    if (!c) return notFound(reply)
    const done = await takeFlash<{ notice: string; warning?: string }>(request, deps, `/admin/companies/${c.id}`)
    if (done) return detailPage(reply, deps, request.viewer!, c, done.notice, undefined, done.warning)
    const warning = (request.query as Record<string, unknown>).unmanaged !== undefined ? unmanagedWarning(c.perimeter, await deps.sites()) : undefined
    return detailPage(reply, deps, request.viewer!, c, warning ? 'Entreprise ajoutée.' : undefined, undefined, warning)
  })

  app.post('/admin/companies/:id/status', ADMIN, async (request, reply) => {
    const c = companyOf(request)
    if (!c) return notFound(reply)
    const status = fieldText(request.body, 'status')
    if (status !== 'active' && status !== 'suspended') return detailPage(reply.code(400), deps, request.viewer!, c, undefined, 'État inconnu.')
    if (status === 'suspended' && fieldText(request.body, 'confirmed') !== 'yes') return confirmSuspension(reply, deps, request.viewer!, c)
    let next: CompanyRecord
    try {
      next = await deps.companies.update(c.id, r => ({ ...r, status }), { actor: { kind: 'console', user: request.viewer!.username } })
    } catch (err) {
      const other = overlapping(err)
      if (!other) throw err
      return detailPage(reply.code(409), deps, request.viewer!, c, undefined, `Réactivation refusée : ${onePerSite(other)}`)
    }
    if (status === 'suspended') {
      await deps.sessions.deleteWhere(s => deps.users.get(s.username)?.companyId === c.id)
    }
    deps.log.info({ company: c.id, status, by: request.viewer!.username }, 'console: company status')
    auditConsole(deps, request.viewer!.username, status === 'suspended' ? 'company.suspended' : 'company.resumed', c.id)
    return saved(request, reply, next, status === 'suspended' ? 'Entreprise suspendue.' : 'Entreprise réactivée.')
  })

  limitsRoute(app, deps, {
    companyOf, notFound, saved,
    page: (reply, viewer, c, problem) => detailPage(reply, deps, viewer, c, undefined, problem),
  })

  app.post('/admin/companies/:id/subject', ADMIN, async (request, reply) => {
    const c = companyOf(request)
    if (!c) return notFound(reply)
    const subject = readCertSubjectFr(fieldText(request.body, 'certSubject') || undefined, c.id, c.name)
    if ('problem' in subject) return detailPage(reply.code(400), deps, request.viewer!, c, undefined, subject.problem)
    const next = await deps.companies.update(c.id, r => ({ ...r, certSubject: subject.subject }))
    auditConsole(deps, request.viewer!.username, 'company.rebound', c.id, 'ok', { certSubject: subject.subject })
    return saved(request, reply, next, 'Sujet du certificat enregistré.')
  })

  app.post('/admin/companies/:id/perimeter', ADMIN, async (request, reply) => {
    const c = companyOf(request)
    if (!c) return notFound(reply)
    const perimeter = readPerimeterFr([fieldText(request.body, 'sites')])
    if ('problem' in perimeter) return detailPage(reply.code(400), deps, request.viewer!, c, undefined, perimeter.problem)
    let next: CompanyRecord
    try {
      next = await deps.companies.update(c.id, r => ({ ...r, perimeter: perimeter.perimeter }), { actor: { kind: 'console', user: request.viewer!.username } })
    } catch (err) {
      const other = overlapping(err)
      if (!other) throw err
      return detailPage(reply.code(409), deps, request.viewer!, c, undefined, `Périmètre refusé : ${onePerSite(other)}`)
    }
    auditConsole(deps, request.viewer!.username, 'company.rebound', c.id, 'ok', { perimeter: perimeter.perimeter })
    return saved(request, reply, next, 'Périmètre enregistré.', unmanagedWarning(next.perimeter, await deps.sites()))
  })
}
