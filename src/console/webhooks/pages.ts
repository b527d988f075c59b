/**
 * "Webhooks" (DECISIONS.md "Events for BSPs", "Web console"): a company's endpoints
 * (address, types, state, last delivery, cursor), the form that adds one after the echo
 * check, its `whsec_` secret shown once on the endpoint's page (post/redirect/get, the
 * secret waiting in the session's flash as a new token's does), and per endpoint its
 * delivery log, rotation of its secret, redelivery from an event and removal. What
 * `epx webhook` does, with its checks (changes.ts). Tenancy as for tokens: a member
 * manages its own company's, an admin any; another company's endpoint is a 404 exactly
 * as a missing one.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { isEpxError } from '../../errors.ts'
import { EVENT_TYPES, eventId, seqOfEventId, type EventType } from '../../store/events.ts'
import type { WebhookEndpoint } from '../../store/webhooks.ts'
import { companyInView, fieldText, fieldValues, mayActFor } from '../access.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html } from '../html.ts'
import { csrfField, errorPage } from '../layout.ts'
import { one } from '../pages/respond.ts'
import { setFlash, takeFlash } from '../session.ts'
import { parisTime } from '../time.ts'
import type { Viewer } from '../viewer.ts'
import { addEndpoint, MAX_OVERLAP_HOURS, redeliver, removeEndpoint, rotateSecret, type WebhookChanges } from '../../webhooks/changes.ts'
import { addForm, deliveryLog, endpointFacts, endpointForms, endpointPath, endpointRows, secretBox, WEBHOOKS_PATH, type AddForm, type EndpointView } from './view.ts'
import { refusalFr } from './wording.ts'

const WEBHOOK_ID = /^wh_[0-9a-f]{16}$/
/** Attempts the endpoint's page shows (the store keeps the last 100). */
const LOG_SHOWN = 50

interface Shown { readonly secret: string; readonly rotated?: { readonly untilMs: number } }

/** A change made by a console user: audited as theirs, and the deliverer told at once. */
function changesBy (deps: ConsoleDeps, user: string): WebhookChanges {
  return { store: deps.store, audit: deps.audit, actor: { kind: 'console', user }, now: () => deps.clock.now().getTime(), changed: () => deps.webhooks.changed() }
}

export function webhooksPages (app: FastifyInstance, deps: ConsoleDeps): void {
  const hooks = deps.webhooks.endpoints
  const viewOf = (endpoint: WebhookEndpoint): EndpointView => {
    const last = hooks.log(endpoint.id, 1)[0]
    return { endpoint, state: hooks.stateOf(endpoint.id), ...(last ? { last } : {}) }
  }

  function listPage (reply: FastifyReply, viewer: Viewer, asked: unknown, form: AddForm, notice?: string) {
    const companyId = companyInView(viewer, asked)
    const companies = viewer.admin ? deps.companies.list().map(c => c.id) : []
    const views = hooks.list(companyId).map(viewOf)
    return reply.page({
      title: 'Webhooks',
      body: html`
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p class="hint">Les événements de ${viewer.admin ? "l'entreprise" : 'votre entreprise'} (Besoins agrégés publiés, statut des instructions, réalisé, périmètre)
sont envoyés à chacune de ses adresses, un à la fois et dans l'ordre, signés (Standard Webhooks 1.0) ; une réponse 2xx vaut livraison, sinon l'envoi est
réessayé pendant 24 h, après quoi le webhook est marqué en échec. Le flux GET evenements garde tous les événements.</p>
${addForm(viewer, companies, { companyId, ...form })}
<h2>Webhooks ${companyId ? html`de ${companyId}` : 'de toutes les entreprises'}</h2>
${viewer.admin ? html`<form method="get" action="${WEBHOOKS_PATH}" class="chooser"><label for="filter">Entreprise</label>
<select id="filter" name="company"><option value="">Toutes</option>${companies.map(c => html`<option value="${c}"${c === companyId ? html` selected` : ''}>${c}</option>`)}</select>
<button type="submit">Filtrer</button></form>` : ''}
${endpointRows(views, viewer, 'Aucun webhook pour l\'instant.')}`,
    })
  }

  /** An endpoint the viewer may act on; undefined for one that is missing or another company's (answered alike). */
  const ownEndpoint = (request: FastifyRequest): WebhookEndpoint | undefined => {
    const id = (request.params as { id: string }).id
    const e = WEBHOOK_ID.test(id) ? hooks.get(id) : undefined
    return e && mayActFor(request.viewer!, e.companyId) ? e : undefined
  }
  const notFound = (reply: FastifyReply) => errorPage(reply, 404, 'Webhook introuvable', html`Ce webhook n'existe pas, ou il n'appartient pas à votre entreprise : <a href="${WEBHOOKS_PATH}">retour aux webhooks</a>.`)

  async function endpointPage (request: FastifyRequest, reply: FastifyReply, e: WebhookEndpoint, o: { problem?: string; notice?: string } = {}) {
    const viewer = request.viewer!
    const shown = await takeFlash<Shown>(request, deps, endpointPath(e.id))
    const lead = shown?.rotated
      ? html`Nouveau secret du webhook <code>${e.id}</code> ; l'ancien signe encore jusqu'au ${parisTime(shown.rotated.untilMs, 'minute')}.`
      : html`Webhook <code>${e.id}</code> ajouté pour ${e.companyId} : il reçoit les événements à partir du prochain.`
    return reply.page({
      title: `Webhook ${e.id}`,
      body: html`${shown ? secretBox(shown.secret, lead) : ''}
${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}
${o.problem ? html`<p class="error" role="alert">${o.problem}</p>` : ''}
${endpointFacts(viewOf(e), deps.clock.now().getTime())}
${deliveryLog(hooks.log(e.id, LOG_SHOWN))}
${endpointForms(viewer, e)}`,
    })
  }

  app.get(WEBHOOKS_PATH, async (request, reply) => {
    const removed = one(request.query, 'removed')
    return listPage(reply, request.viewer!, one(request.query, 'company'), { url: '', types: EVENT_TYPES },
      removed && WEBHOOK_ID.test(removed) ? `Le webhook ${removed} est retiré : rien ne lui est plus envoyé.` : undefined)
  })

  app.post(WEBHOOKS_PATH, async (request, reply) => {
    const viewer = request.viewer!
    const companyId = viewer.admin ? fieldText(request.body, 'company') : viewer.companyId!
    const url = fieldText(request.body, 'url')
    const types = [...new Set(fieldValues(request.body, 'type'))]
    const form = { url, types }
    let problem: string | undefined
    if (!deps.companies.get(companyId) || !mayActFor(viewer, companyId)) problem = 'Choisissez une entreprise existante.'
    else if (url === '') problem = 'Indiquez l\'adresse du point de terminaison, en https://.'
    else if (url.length > 2048) problem = 'L\'adresse compte 2 048 caractères au plus.'
    else if (types.length === 0) problem = 'Cochez au moins un type d\'événement.'
    else if (!types.every(t => (EVENT_TYPES as readonly string[]).includes(t))) problem = 'Type d\'événement inconnu.'
    if (problem) return listPage(reply.code(400), viewer, companyId, { ...form, problem })
    let added: WebhookEndpoint
    try {
      added = await addEndpoint(changesBy(deps, viewer.username), deps.webhooks.connect(), companyId, url, types as EventType[])
    } catch (err) {
      if (!isEpxError(err) || (err.code !== 'EPX_WEBHOOK_REFUSED' && err.code !== 'EPX_WEBHOOK_ECHO_FAILED')) throw err
      deps.log.info({ company: companyId, by: viewer.username, code: err.code }, 'console: webhook refused')
      return listPage(reply.code(400), viewer, companyId, { ...form, problem: refusalFr(err, url) })
    }
    deps.log.info({ webhook: added.id, company: companyId, by: viewer.username }, 'console: webhook added')
    await setFlash(request, deps, endpointPath(added.id), { secret: added.secrets[0]!.secret } satisfies Shown)
    return reply.redirect(endpointPath(added.id), 303)
  })

  app.get(`${WEBHOOKS_PATH}/:id`, async (request, reply) => {
    const e = ownEndpoint(request)
    if (!e) return notFound(reply)
    const from = one(request.query, 'redelivered')
    return endpointPage(request, reply, e, from && seqOfEventId(from) !== undefined
      ? { notice: `Les événements sont renvoyés à partir de ${from}, dans l'ordre ; un webhook en échec est réessayé.` }
      : {})
  })

  app.post(`${WEBHOOKS_PATH}/:id/rotate`, async (request, reply) => {
    const e = ownEndpoint(request)
    if (!e) return notFound(reply)
    const text = fieldText(request.body, 'overlap')
    const hours = /^\d{1,3}$/.test(text) ? Number(text) : NaN
    if (!(hours <= MAX_OVERLAP_HOURS)) return endpointPage(request, reply.code(400), e, { problem: `Durée invalide : un nombre entier d'heures de 0 à ${MAX_OVERLAP_HOURS}.` })
    const { secret, oldUntilMs } = await rotateSecret(changesBy(deps, request.viewer!.username), e, hours)
    deps.log.info({ webhook: e.id, company: e.companyId, by: request.viewer!.username }, 'console: webhook secret rotated')
    await setFlash(request, deps, endpointPath(e.id), { secret, rotated: { untilMs: oldUntilMs } } satisfies Shown)
    return reply.redirect(endpointPath(e.id), 303)
  })

  app.post(`${WEBHOOKS_PATH}/:id/redeliver`, async (request, reply) => {
    const e = ownEndpoint(request)
    if (!e) return notFound(reply)
    const text = fieldText(request.body, 'from')
    const seq = text === '' ? undefined : seqOfEventId(text)
    const last = deps.webhooks.lastEvent(e.companyId)
    let problem: string | undefined
    if (text !== '' && !(seq !== undefined && seq >= 1)) problem = `« ${text} » n'est pas un identifiant d'événement : des chiffres, tels que le flux les donne (par exemple 000000000000042).`
    else if (seq !== undefined && seq > last) problem = `${e.companyId} n'a pas d'événement ${text} : son dernier est ${eventId(last)}.`
    if (problem) return endpointPage(request, reply.code(400), e, { problem })
    const from = await redeliver(changesBy(deps, request.viewer!.username), e, seq)
    return reply.redirect(`${endpointPath(e.id)}?redelivered=${from}`, 303)
  })

  app.get(`${WEBHOOKS_PATH}/:id/remove`, async (request, reply) => {
    const e = ownEndpoint(request)
    if (!e) return notFound(reply)
    return reply.page({
      title: 'Retirer un webhook',
      body: html`<p>Retirer le webhook <code>${e.id}</code> de ${e.companyId} (<code>${e.url}</code>) ? Rien ne lui sera plus envoyé ;
son journal de livraison est effacé. Les événements restent dans le flux GET evenements.</p>
<form method="post" action="${endpointPath(e.id)}/remove">${csrfField(request.viewer!)}
<button type="submit" class="danger">Retirer le webhook</button> <a href="${endpointPath(e.id)}">Annuler</a>
</form>`,
    })
  })

  app.post(`${WEBHOOKS_PATH}/:id/remove`, async (request, reply) => {
    const e = ownEndpoint(request)
    if (!e) return notFound(reply)
    await removeEndpoint(changesBy(deps, request.viewer!.username), e)
    deps.log.info({ webhook: e.id, company: e.companyId, by: request.viewer!.username }, 'console: webhook removed')
    return reply.redirect(`${WEBHOOKS_PATH}?removed=${e.id}`, 303)
  })
}
