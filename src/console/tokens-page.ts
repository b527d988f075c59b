/**
 * "Jetons d'accès": create a token (scopes, expiry), shown once with a
 * copy button and the curl command that uses it; list; revoke after a confirmation. The
 * same code paths as `epx token` (auth/issue-token.ts, store/tokens.ts).
 * @module
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import { createToken } from '../auth/issue-token.ts'
import { tokenState, type TokenState } from '../store/tokens.ts'
import { parseDuration } from '../auth/tokens.ts'
import { SCOPES, isScope, type Scope } from '../contract/scopes.ts'
import { EVENTS_PATH, INBOUND_PATH, OUTBOUND_PATH, REALISE_PATH } from '../contract/paths.ts'
import { addDays, parisDateOf } from '../contract/paris-day.ts'
import type { TokenRecord } from '../store/tokens.ts'
import { companyInView, fieldText, fieldValues, mayActFor } from './access.ts'
import type { ConsoleDeps } from './deps.ts'
import { html, type SafeHtml } from './html.ts'
import { csrfField, errorPage } from './layout.ts'
import { parisHeader, parisTimeOrDash } from './time.ts'
import type { Viewer } from './viewer.ts'
import { auditConsole } from './audit.ts'
import { setFlash, takeFlash } from './session.ts'

const SCOPE_LABELS: Record<Scope, string> = {
  'outbound:besoins-agreges': 'Lire les Besoins agrégés (GET besoins-agreges)',
  'inbound:programme-soutirage': 'Envoyer des programmes (POST programme-soutirage)',
  'outbound:realise': 'Lire le réalisé : programmé contre soutiré (GET realise)',
  'outbound:evenements': 'Être prévenu des changements (GET evenements)',
}
const EXPIRIES = [['7d', '7 jours'], ['30d', '30 jours'], ['90d', '90 jours'], ['365d', '1 an'], ['never', 'Sans expiration']] as const
const STATE_LABELS: Record<TokenState, string> = { active: 'actif', expired: 'expiré', revoked: 'révoqué' }
const TOKEN_ID = /^tok_[0-9a-f]{16}$/

/** Tokens a page of the list shows; older ones are reached with `?page=`. */
const PAGE_SIZE = 50

function tokenRows (tokens: readonly TokenRecord[], viewer: Viewer, nowMs: number, emptyText: string): SafeHtml {
  if (tokens.length === 0) return html`<p>${emptyText}</p>`
  return html`<table class="tokens">
<caption>Jetons, le plus récent d'abord. Les secrets ne sont jamais affichés après leur création.</caption>
<thead><tr><th scope="col">Identifiant public</th><th scope="col">État</th><th scope="col">Libellé</th>${viewer.admin ? html`<th scope="col">Entreprise</th>` : ''}<th scope="col">Portées</th>
<th scope="col">${parisHeader('Créé')}</th><th scope="col">${parisHeader('Dernière utilisation')}</th><th scope="col">${parisHeader('Expire')}</th><th scope="col">Action</th></tr></thead>
<tbody>${tokens.map(t => {
    const state = tokenState(t, nowMs)
    return html`
<tr><td><code>${t.id}</code></td><td class="state-${state}">${STATE_LABELS[state]}</td><td>${t.label ?? html`<span class="hint">&mdash;</span>`}</td>${viewer.admin ? html`<td>${t.companyId}</td>` : ''}<td>${t.scopes.map(s => html`<code>${s}</code><br>`)}</td>
<td>${parisTimeOrDash(t.createdAt, 'minute')}${t.createdBy ? html`<br><small>par ${t.createdBy}</small>` : ''}</td><td>${parisTimeOrDash(t.lastUsedAt, 'minute')}</td><td>${t.expiresAt ? parisTimeOrDash(t.expiresAt, 'minute') : 'jamais'}</td>
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
<p><label for="label">Libellé</label><input id="label" name="label" maxlength="80" aria-describedby="label-hint">
<span id="label-hint" class="hint">Facultatif : à quoi sert ce jeton (« collecte de nuit », « recette »&hellip;).</span></p>
<fieldset><legend>Portées</legend>${SCOPES.map((s, i) => html`
<p><input type="checkbox" id="scope-${i}" name="scope" value="${s}"> <label for="scope-${i}">${SCOPE_LABELS[s]}</label></p>`)}
</fieldset>
<p><label for="expires">Expiration</label>
<select id="expires" name="expires">${EXPIRIES.map(([v, label]) => html`<option value="${v}"${v === '90d' ? html` selected` : ''}>${label}</option>`)}</select></p>
<p><button type="submit">Créer le jeton</button></p>
</form>`
}

interface ListQuery { readonly company?: unknown; readonly state?: unknown; readonly page?: unknown }

function listPage (reply: FastifyReply, deps: ConsoleDeps, viewer: Viewer, q: ListQuery, notice?: string, problem?: string) {
  const companyId = companyInView(viewer, q.company)
  const nowMs = deps.clock.now().getTime()
  const all = deps.tokens.list(companyId).sort((a, b) => b.createdAt.localeCompare(a.createdAt))
  // Revoked and expired tokens pile up over the years: the list shows the usable ones unless asked.
  const showAll = q.state === 'all'
  const shown = showAll ? all : all.filter(t => tokenState(t, nowMs) === 'active')
  const hidden = all.length - shown.length
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE))
  const page = Math.min(pages, Math.max(1, Number.parseInt(typeof q.page === 'string' ? q.page : '1', 10) || 1))
  const tokens = shown.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE)
  const href = (o: { state?: string; page?: number }) => {
    const p = new URLSearchParams()
    if (companyId && viewer.admin) p.set('company', companyId)
    if (o.state) p.set('state', o.state)
    if (o.page && o.page > 1) p.set('page', String(o.page))
    return `/tokens${p.size ? `?${p}` : ''}`
  }
  const companies = viewer.admin ? deps.companies.list().map(c => c.id) : []
  return reply.page({
    title: "Jetons d'accès",
    body: html`
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p class="hint">Un jeton s'utilise avec le certificat client de ${viewer.admin ? "l'entreprise" : 'votre entreprise'} (mTLS) :
<code>Authorization: Bearer epx_&hellip;</code>.</p>
${createForm(viewer, companies, problem)}
<h2>Jetons ${companyId ? html`de ${companyId}` : 'de toutes les entreprises'}</h2>
<form method="get" action="/tokens" class="chooser">${viewer.admin ? html`<label for="filter">Entreprise</label>
<select id="filter" name="company"><option value="">Toutes</option>${companies.map(c => html`<option value="${c}"${c === companyId ? html` selected` : ''}>${c}</option>`)}</select>` : ''}
<label for="state">Jetons</label>
<select id="state" name="state"><option value="">utilisables</option><option value="all"${showAll ? html` selected` : ''}>tous (révoqués et expirés compris)</option></select>
<button type="submit">Filtrer</button></form>
${!showAll && hidden > 0 ? html`<p class="hint">${hidden === 1 ? 'Un jeton révoqué ou expiré est masqué' : `${hidden} jetons révoqués ou expirés sont masqués`} : <a href="${href({ state: 'all' })}">les afficher</a>.</p>` : ''}
${tokenRows(tokens, viewer, nowMs, showAll || all.length === 0 ? "Aucun jeton pour l'instant." : 'Aucun jeton utilisable.')}
${pages > 1 ? html`<nav class="days" aria-label="Pages de jetons">${page > 1 ? html`<a href="${href({ state: showAll ? 'all' : undefined, page: page - 1 })}">&larr; Plus récents</a>` : ''}
<span>Page ${page} sur ${pages}</span>
${page < pages ? html`<a href="${href({ state: showAll ? 'all' : undefined, page: page + 1 })}">Plus anciens &rarr;</a>` : ''}</nav>` : ''}`,
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
  if (scopes.includes('outbound:realise')) {
    const yesterday = addDays(parisDateOf(deps.clock.now()), -1)
    lines.push(`curl -i ${tls} -H "Authorization: Bearer ${secret}" "${base}${REALISE_PATH}?site_id=${site}&target_date=${yesterday}"`)
  }
  if (scopes.includes('outbound:evenements')) {
    lines.push(`curl -i ${tls} -H "Authorization: Bearer ${secret}" "${base}${EVENTS_PATH}?limite=100&attente=30"`)
  }
  if (scopes.includes('inbound:programme-soutirage')) {
    lines.push(`curl -i ${tls} -H "Authorization: Bearer ${secret}" -H "Content-Type: application/json" --data-binary @programme.json "${base}${INBOUND_PATH}"`)
  }
  return lines.join('\n\n')
}

/**
 * Where a new token is shown: post/redirect/get, its secret waiting in the session's
 * flash (server-side, never in the URL) for this page's first visit only. A reload shows
 * the token without its secret and never makes a second one.
 */
const createdPath = (tokenId: string) => `/tokens/created/${tokenId}`

export function tokensPage (app: FastifyInstance, deps: ConsoleDeps): void {
  app.get('/tokens', async (request, reply) => {
    const viewer = request.viewer!
    const query = request.query as Record<string, unknown>
    const notice = query.revoked
    return listPage(reply, deps, viewer, query,
      typeof notice === 'string' && TOKEN_ID.test(notice) ? `Le jeton ${notice} est révoqué : il est refusé (401) dès la prochaine requête.` : undefined)
  })

  app.post('/tokens', async (request, reply) => {
    const viewer = request.viewer!
    const companyId = viewer.admin ? fieldText(request.body, 'company') : viewer.companyId!
    const scopes = fieldValues(request.body, 'scope')
    const expires = fieldText(request.body, 'expires') || '90d'
    const label = fieldText(request.body, 'label').replace(/\s+/g, ' ')
    const ttlMs = expires === 'never' ? undefined : parseDuration(expires)
    const company = deps.companies.get(companyId)
    let problem: string | undefined
    if (!company || !mayActFor(viewer, companyId)) problem = 'Choisissez une entreprise existante.'
    else if (scopes.length === 0) problem = 'Cochez au moins une portée.'
    else if (!scopes.every(isScope)) problem = 'Portée inconnue.'
    else if (expires !== 'never' && ttlMs === undefined) problem = 'Expiration invalide.'
    else if (label.length > 80) problem = 'Le libellé compte 80 caractères au plus.'
    if (problem) return listPage(reply.code(400), deps, viewer, { company: companyId }, undefined, problem)
    const nowMs = deps.clock.now().getTime()
    const { record, token } = await createToken(deps.store, { kind: 'console', user: viewer.username }, companyId, scopes as Scope[], ttlMs, nowMs, label || undefined)
    deps.log.info({ token: record.id, company: companyId, by: viewer.username }, 'console: token created')
    await setFlash(request, deps, createdPath(record.id), { secret: token })
    return reply.redirect(createdPath(record.id), 303)
  })

  app.get('/tokens/created/:id', async (request, reply) => {
    const viewer = request.viewer!
    const id = (request.params as { id: string }).id
    const record = TOKEN_ID.test(id) ? deps.tokens.get(id) : undefined
    if (!record || !mayActFor(viewer, record.companyId)) {
      return errorPage(reply, 404, 'Jeton introuvable', html`Ce jeton n'existe pas, ou il n'appartient pas à votre entreprise : <a href="/tokens">retour aux jetons</a>.`)
    }
    const shown = { secret: (await takeFlash<{ secret: string }>(request, deps, createdPath(record.id)))?.secret }
    const company = deps.companies.get(record.companyId)
    const facts = html`<dl class="facts"><dt>Identifiant public</dt><dd><code>${record.id}</code></dd>${record.label ? html`<dt>Libellé</dt><dd>${record.label}</dd>` : ''}
<dt>Portées</dt><dd>${record.scopes.map(s => html`<code>${s}</code><br>`)}</dd><dt>Expire</dt><dd>${record.expiresAt ? parisTimeOrDash(record.expiresAt) : 'jamais'}</dd></dl>`
    if (!shown.secret) {
      return reply.page({
        title: 'Jeton créé',
        body: html`<p class="warning" role="alert">Le secret du jeton <code>${record.id}</code> a déjà été affiché et ne le sera plus : aucun autre jeton n'a été créé.
S'il n'a pas été copié, révoquez ce jeton et créez-en un autre.</p>
${facts}
<p><a href="/tokens/${record.id}/revoke">Révoquer ce jeton</a> · <a href="/tokens">Retour aux jetons</a></p>`,
      })
    }
    return reply.page({
      title: 'Jeton créé',
      body: html`
<p class="notice" role="status">Jeton <code>${record.id}</code> créé pour ${record.companyId}.
Copiez le secret maintenant : il ne sera plus jamais affiché.</p>
${company?.status === 'suspended' ? html`<p class="error">L'entreprise est suspendue : le jeton sera refusé (403) tant qu'elle le reste.</p>` : ''}
<p><label for="token-secret">Secret</label></p>
<input id="token-secret" class="secret" readonly value="${shown.secret}">
<p><button type="button" data-copy="token-secret" hidden>Copier le secret</button> <span id="token-secret-status" role="status"></span></p>
${facts}
<h2>Essayer avec curl</h2>
<p class="hint">Depuis le dossier du certificat client de l'entreprise (client.crt, client.key, ca.crt) :</p>
<pre id="curl-command">${await curlLines(deps, shown.secret, record.scopes, record.companyId)}</pre>
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
