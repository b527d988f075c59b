/**
 * "Jetons d'accès": create a token (scopes, expiry), shown once with a
 * copy button and the curl command that uses it; list; revoke after a confirmation. The
 * same code paths as `epx token` (auth/issue-token.ts, store/tokens.ts).
 * @module
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import { createToken } from '../auth/issue-token.ts'
import { tokenState, type TokenState } from '../store/tokens.ts'
import { SCOPES, isScope, parseDuration, type Scope } from '../auth/tokens.ts'
import { INBOUND_PATH, OUTBOUND_PATH } from '../contract/paths.ts'
import { addDays, parisDateOf } from '../contract/paris-day.ts'
import type { TokenRecord } from '../store/tokens.ts'
import { companyInView, fieldText, fieldValues, mayActFor } from './access.ts'
import type { ConsoleDeps } from './deps.ts'
import { html, type SafeHtml } from './html.ts'
import { csrfField, errorPage } from './layout.ts'
import { parisTimeOrDash } from './time.ts'
import type { Viewer } from './viewer.ts'
import { auditConsole } from './audit.ts'

const SCOPE_LABELS: Record<Scope, string> = {
  'outbound:besoins-agreges': 'Lire les Besoins agrégés (GET besoins-agreges)',
  'inbound:programme-soutirage': 'Envoyer des programmes (POST programme-soutirage)',
}
const EXPIRIES = [['7d', '7 jours'], ['30d', '30 jours'], ['90d', '90 jours'], ['365d', '1 an'], ['never', 'Sans expiration']] as const
const STATE_LABELS: Record<TokenState, string> = { active: 'actif', expired: 'expiré', revoked: 'révoqué' }
const TOKEN_ID = /^tok_[0-9a-f]{16}$/

function tokenRows (tokens: readonly TokenRecord[], viewer: Viewer, nowMs: number): SafeHtml {
  if (tokens.length === 0) return html`<p>Aucun jeton pour l'instant.</p>`
  return html`<table>
<caption class="hint">Les secrets ne sont jamais affichés après leur création.</caption>
<thead><tr><th scope="col">Identifiant public</th>${viewer.admin ? html`<th scope="col">Entreprise</th>` : ''}<th scope="col">Portées</th>
<th scope="col">Créé</th><th scope="col">Dernière utilisation</th><th scope="col">Expire</th><th scope="col">État</th><th scope="col">Action</th></tr></thead>
<tbody>${tokens.map(t => {
    const state = tokenState(t, nowMs)
    return html`
<tr><td><code>${t.id}</code></td>${viewer.admin ? html`<td>${t.companyId}</td>` : ''}<td>${t.scopes.map(s => html`<code>${s}</code> `)}</td>
<td>${parisTimeOrDash(t.createdAt)}</td><td>${parisTimeOrDash(t.lastUsedAt)}</td><td>${t.expiresAt ? parisTimeOrDash(t.expiresAt) : 'jamais'}</td>
<td class="state-${state}">${STATE_LABELS[state]}</td>
<td>${state === 'revoked' ? '' : html`<a href="/tokens/${t.id}/revoke">Révoquer</a>`}</td></tr>`
  })}</tbody></table>`
}

function createForm (viewer: Viewer, companies: readonly string[], problem?: string): SafeHtml {
  return html`
<h2>Créer un jeton</h2>
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
<form method="post" action="/tokens">${csrfField(viewer)}
${viewer.admin ? html`<p><label for="company">Entreprise</label>
<select id="company" name="company" required>${companies.map(c => html`<option value="${c}">${c}</option>`)}</select></p>` : ''}
<fieldset><legend>Portées</legend>${SCOPES.map((s, i) => html`
<p><input type="checkbox" id="scope-${i}" name="scope" value="${s}"> <label for="scope-${i}">${SCOPE_LABELS[s]}</label></p>`)}
</fieldset>
<p><label for="expires">Expiration</label>
<select id="expires" name="expires">${EXPIRIES.map(([v, label]) => html`<option value="${v}"${v === '90d' ? html` selected` : ''}>${label}</option>`)}</select></p>
<p><button type="submit">Créer le jeton</button></p>
</form>`
}

function listPage (reply: FastifyReply, deps: ConsoleDeps, viewer: Viewer, asked: unknown, notice?: string, problem?: string) {
  const companyId = companyInView(viewer, asked)
  const tokens = deps.tokens.list(companyId).sort((a, b) => b.createdAt.localeCompare(a.createdAt))
  const companies = viewer.admin ? deps.companies.list().map(c => c.id) : []
  return reply.page({
    title: "Jetons d'accès",
    body: html`
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p class="hint">Un jeton s'utilise avec le certificat client de ${viewer.admin ? "l'entreprise" : 'votre entreprise'} (mTLS) :
<code>Authorization: Bearer epx_…</code>.</p>
${createForm(viewer, companies, problem)}
<h2>Jetons ${companyId ? html`de ${companyId}` : 'de toutes les entreprises'}</h2>
${viewer.admin ? html`<form method="get" action="/tokens"><p><label for="filter">Afficher l'entreprise</label>
<select id="filter" name="company"><option value="">Toutes</option>${companies.map(c => html`<option value="${c}"${c === companyId ? html` selected` : ''}>${c}</option>`)}</select>
<button type="submit">Filtrer</button></p></form>` : ''}
${tokenRows(tokens, viewer, deps.clock.now().getTime())}`,
  })
}

/** The curl lines for a new token, with the API's real address, a real site and tomorrow. */
async function curlLines (deps: ConsoleDeps, secret: string, scopes: readonly Scope[], companyId: string): Promise<string> {
  const perimeter = deps.companies.get(companyId)?.perimeter
  let site = 'PRM00000000000000'
  if (Array.isArray(perimeter) && perimeter.length) site = perimeter[0]!
  else site = await deps.sites().then(s => s[0]?.site_id ?? site, () => site)
  const base = deps.apiUrl.origin
  const tls = '--cert client.crt --key client.key --cacert ca.crt'
  const lines: string[] = []
  if (scopes.includes('outbound:besoins-agreges')) {
    const tomorrow = addDays(parisDateOf(deps.clock.now()), 1)
    lines.push(`curl -i ${tls} -H "Authorization: Bearer ${secret}" "${base}${OUTBOUND_PATH}?site_id=${site}&target_date=${tomorrow}"`)
  }
  if (scopes.includes('inbound:programme-soutirage')) {
    lines.push(`curl -i ${tls} -H "Authorization: Bearer ${secret}" -H "Content-Type: application/json" --data-binary @programme.json "${base}${INBOUND_PATH}"`)
  }
  return lines.join('\n\n')
}

export function tokensPage (app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/tokens', async (request, reply) => {
    const viewer = request.viewer!
    const notice = (request.query as Record<string, unknown>).revoked
    return listPage(reply, deps, viewer, (request.query as Record<string, unknown>).company,
      typeof notice === 'string' && TOKEN_ID.test(notice) ? `Le jeton ${notice} est révoqué : il est refusé (401) dès la prochaine requête.` : undefined)
  })

  app.post('/tokens', async (request, reply) => {
    const viewer = request.viewer!
    const companyId = viewer.admin ? fieldText(request.body, 'company') : viewer.companyId!
    const scopes = fieldValues(request.body, 'scope')
    const expires = fieldText(request.body, 'expires') || '90d'
    const ttlMs = expires === 'never' ? undefined : parseDuration(expires)
    const company = deps.companies.get(companyId)
    let problem: string | undefined
    if (!company || !mayActFor(viewer, companyId)) problem = 'Choisissez une entreprise existante.'
    else if (scopes.length === 0) problem = 'Cochez au moins une portée.'
    else if (!scopes.every(isScope)) problem = 'Portée inconnue.'
    else if (expires !== 'never' && ttlMs === undefined) problem = 'Expiration invalide.'
    if (problem) return listPage(reply.code(400), deps, viewer, companyId, undefined, problem)
    const { record, token } = await createToken(deps.store, { kind: 'console', user: viewer.username }, companyId, scopes as Scope[], ttlMs, deps.clock.now().getTime())
    deps.log.info({ token: record.id, company: companyId, by: viewer.username }, 'console: token created')
    return reply.page({
      title: 'Jeton créé',
      body: html`
<p class="notice" role="status">Jeton <code>${record.id}</code> créé pour ${companyId}.
Copiez le secret maintenant : il ne sera plus jamais affiché.</p>
${company!.status === 'suspended' ? html`<p class="error">L'entreprise est suspendue : le jeton sera refusé (403) tant qu'elle le reste.</p>` : ''}
<p><label for="token-secret">Secret</label></p>
<input id="token-secret" class="secret" readonly value="${token}">
<p><button type="button" data-copy="token-secret" hidden>Copier le secret</button> <span id="token-secret-status" role="status"></span></p>
<dl class="facts"><dt>Portées</dt><dd>${record.scopes.join(', ')}</dd><dt>Expire</dt><dd>${record.expiresAt ? parisTimeOrDash(record.expiresAt) : 'jamais'}</dd></dl>
<h2>Essayer avec curl</h2>
<p class="hint">Depuis le dossier du certificat client de l'entreprise (client.crt, client.key, ca.crt) :</p>
<pre id="curl-command">${await curlLines(deps, token, record.scopes, companyId)}</pre>
<p><a href="/tokens">Retour aux jetons</a></p>
<script src="/assets/copy.js"></script>`,
    })
  })

  /** A token the viewer may act on, or a 404 page exactly as for a token that does not exist. */
  const ownToken = (viewer: Viewer, id: string): TokenRecord | undefined => {
    const t = TOKEN_ID.test(id) ? deps.tokens.get(id) : undefined
    return t && mayActFor(viewer, t.companyId) ? t : undefined
  }
  const notFound = (reply: FastifyReply) => errorPage(reply, 404, 'Jeton introuvable', "Ce jeton n'existe pas, ou il n'appartient pas à votre entreprise.")

  app.get('/tokens/:id/revoke', async (request, reply) => {
    const viewer = request.viewer!
    const t = ownToken(viewer, (request.params as { id: string }).id)
    if (!t) return notFound(reply)
    return reply.page({
      title: 'Révoquer un jeton',
      body: html`
<p>Révoquer le jeton <code>${t.id}</code> de ${t.companyId} (portées : ${t.scopes.join(', ')}) ?
Toute requête qui l'utilise sera refusée (401) dès la prochaine. C'est définitif.</p>
<form method="post" action="/tokens/${t.id}/revoke">${csrfField(viewer)}
<button type="submit" class="danger">Révoquer définitivement</button> <a href="/tokens">Annuler</a>
</form>`,
    })
  })

  app.post('/tokens/:id/revoke', async (request, reply) => {
    const viewer = request.viewer!
    const t = ownToken(viewer, (request.params as { id: string }).id)
    if (!t) return notFound(reply)
    await deps.tokens.revoke(t.id, deps.clock.now().toISOString())
    deps.log.info({ token: t.id, company: t.companyId, by: viewer.username }, 'console: token revoked')
    auditConsole(deps, viewer.username, 'token.revoked', t.id, 'ok', { companyId: t.companyId })
    return reply.redirect(`/tokens?revoked=${t.id}`, 303)
  })
}
