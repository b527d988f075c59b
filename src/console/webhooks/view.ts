/**
 * What the webhook pages show: the list of a company's endpoints with the form that adds
 * one, and an endpoint's page (its facts, a secret shown once, rotation, redelivery, its
 * delivery log). Never a secret but the one just made, on the page the form redirects to.
 * @module
 */
import { EVENT_TYPES, eventId, type EventType } from '../../store/events.ts'
import type { DeliveryLogEntry, DeliveryState, WebhookEndpoint } from '../../store/webhooks.ts'
import { html, type SafeHtml } from '../html.ts'
import { csrfField } from '../layout.ts'
import { frNumber } from '../numbers.ts'
import { parisHeader, parisTime, parisTimeOrDash } from '../time.ts'
import type { Viewer } from '../viewer.ts'
import { MAX_OVERLAP_HOURS, OVERLAP_HOURS } from '../../webhooks/changes.ts'
import { TYPE_LABELS } from './wording.ts'

export const WEBHOOKS_PATH = '/webhooks'
export const endpointPath = (id: string) => `${WEBHOOKS_PATH}/${id}`

/** An endpoint as a row or a page shows it: its record, its delivery state, its last attempt. */
export interface EndpointView {
  readonly endpoint: WebhookEndpoint
  readonly state: DeliveryState
  readonly last?: DeliveryLogEntry
}

/** What the add form had, shown again with its problem. */
export interface AddForm {
  readonly companyId?: string
  readonly url: string
  readonly types: readonly string[]
  readonly problem?: string
}

function typesText (types: readonly EventType[]): SafeHtml {
  return types.length === EVENT_TYPES.length ? html`tous` : html`${types.map(t => html`<code>${t}</code><br>`)}`
}

export function stateText ({ endpoint: e, state }: EndpointView): SafeHtml {
  if (e.failingSince) return html`<span class="state-failing">en échec depuis ${parisTime(e.failingSince, 'minute')}</span><br><small>plus d'envoi avant « Renvoyer »</small>`
  if (state.retry) {
    const n = state.retry.attempts
    return html`<span class="state-active">actif</span><br><small>${n} échec${n > 1 ? 's' : ''}, nouvel essai à ${parisTime(state.retry.nextMs, 'slot')}</small>`
  }
  return html`<span class="state-active">actif</span>`
}

function resultText (l: DeliveryLogEntry): SafeHtml {
  if (l.status !== undefined) return html`<span class="${l.status >= 200 && l.status < 300 ? 'state-active' : 'state-failing'}">${l.status}</span>`
  return html`<span class="state-failing">${l.error ?? 'échec'}</span>`
}

function lastText (last: DeliveryLogEntry | undefined): SafeHtml {
  return last ? html`${parisTime(last.atMs, 'slot')}<br><small>${resultText(last)}</small>` : html`<span class="hint">aucune</span>`
}

const cursorText = (cursor: number) => cursor === 0 ? html`<span class="hint">aucun</span>` : html`<code>${eventId(cursor)}</code>`

export function endpointRows (views: readonly EndpointView[], viewer: Viewer, emptyText: string): SafeHtml {
  if (views.length === 0) return html`<p>${emptyText}</p>`
  return html`<table class="webhooks">
<caption>Webhooks, par identifiant. Les secrets ne sont jamais affichés après leur création.</caption>
<thead><tr><th scope="col">Adresse</th>${viewer.admin ? html`<th scope="col">Entreprise</th>` : ''}<th scope="col">Types</th><th scope="col">État</th>
<th scope="col">${parisHeader('Dernière livraison')}</th><th scope="col">Curseur</th><th scope="col">Action</th></tr></thead>
<tbody>${views.map(v => html`
<tr><td><a href="${endpointPath(v.endpoint.id)}">${v.endpoint.url}</a><br><small><code>${v.endpoint.id}</code></small></td>${viewer.admin ? html`<td>${v.endpoint.companyId}</td>` : ''}
<td>${typesText(v.endpoint.types)}</td><td>${stateText(v)}</td><td>${lastText(v.last)}</td><td>${cursorText(v.state.cursor)}</td>
<td><a href="${endpointPath(v.endpoint.id)}/remove">Retirer</a></td></tr>`)}</tbody></table>`
}

export function addForm (viewer: Viewer, companies: readonly string[], f: AddForm): SafeHtml {
  return html`<h2>Ajouter un webhook</h2>
${f.problem ? html`<p class="error" role="alert">${f.problem}</p>` : ''}
<form method="post" action="${WEBHOOKS_PATH}">${csrfField(viewer)}
${viewer.admin ? html`<p><label for="company">Entreprise</label>
<select id="company" name="company" required>${companies.map(c => html`<option value="${c}"${c === f.companyId ? html` selected` : ''}>${c}</option>`)}</select></p>` : ''}
<p><label for="url">Adresse</label>
<input id="url" name="url" type="url" required maxlength="2048" value="${f.url}" placeholder="https://bsp.example/epx/webhooks" aria-describedby="url-hint">
<span id="url-hint" class="hint">En https, joignable sur l'internet public. Elle est vérifiée à l'ajout : epx l'appelle en GET avec <code>?echo=&lt;valeur&gt;</code>,
et elle doit répondre 200 avec la valeur seule dans le corps.</span></p>
<fieldset><legend>Événements envoyés</legend>${EVENT_TYPES.map((t, i) => html`
<p><input type="checkbox" id="type-${i}" name="type" value="${t}"${f.types.includes(t) ? html` checked` : ''}> <label for="type-${i}">${TYPE_LABELS[t]} <code>${t}</code></label></p>`)}
</fieldset>
<p><button type="submit">Ajouter le webhook</button></p>
</form>`
}

/** The secret just made, once, with a copy button (as a new token's). */
export function secretBox (secret: string, lead: SafeHtml): SafeHtml {
  return html`<p class="notice" role="status">${lead} Copiez le secret maintenant : il ne sera plus jamais affiché.</p>
<p><label for="webhook-secret">Secret de signature</label></p>
<input id="webhook-secret" class="secret" readonly value="${secret}">
<p><button type="button" data-copy="webhook-secret" hidden>Copier le secret</button> <span id="webhook-secret-status" role="status"></span></p>
<p class="hint">Votre point de terminaison vérifie avec lui l'en-tête <code>webhook-signature</code> de chaque envoi (Standard Webhooks 1.0).</p>
<script src="/assets/copy.js"></script>`
}

export function endpointFacts (v: EndpointView, nowMs: number): SafeHtml {
  const e = v.endpoint
  const previous = e.secrets.find(s => s.untilMs !== undefined && s.untilMs > nowMs)
  return html`<dl class="facts"><dt>Identifiant</dt><dd><code>${e.id}</code></dd><dt>Entreprise</dt><dd>${e.companyId}</dd>
<dt>Adresse</dt><dd><code>${e.url}</code></dd><dt>Types</dt><dd>${typesText(e.types)}</dd><dt>État</dt><dd>${stateText(v)}</dd>
<dt>Ajouté</dt><dd>${parisTime(e.createdAt, 'minute')}</dd><dt>Curseur</dt><dd>${cursorText(v.state.cursor)} <small class="hint">le dernier événement livré (ou sans intérêt pour lui)</small></dd>
<dt>Secrets</dt><dd>${previous ? html`le nouveau, et l'ancien jusqu'au ${parisTime(previous.untilMs!, 'minute')} (chaque envoi porte les deux signatures)` : 'un seul'}</dd></dl>`
}

export function endpointForms (viewer: Viewer, e: WebhookEndpoint): SafeHtml {
  const hours = [0, 1, OVERLAP_HOURS, 72, MAX_OVERLAP_HOURS]
  return html`<h2>Changer le secret</h2>
<form method="post" action="${endpointPath(e.id)}/rotate">${csrfField(viewer)}
<p><label for="overlap">L'ancien secret signe encore pendant</label>
<select id="overlap" name="overlap">${hours.map(h => html`<option value="${h}"${h === OVERLAP_HOURS ? html` selected` : ''}>${h === 0 ? 'aucune durée (il cesse aussitôt)' : `${h} h`}</option>`)}</select></p>
<p><button type="submit">Changer le secret</button></p>
</form>
<h2>Renvoyer</h2>
<form method="post" action="${endpointPath(e.id)}/redeliver">${csrfField(viewer)}
<p><label for="from">À partir de l'événement</label>
<input id="from" name="from" inputmode="numeric" maxlength="15" placeholder="000000000000042" aria-describedby="from-hint">
<span id="from-hint" class="hint">Un identifiant d'événement, tel que le flux GET evenements le donne : il est renvoyé, puis les suivants, dans l'ordre.
Vide : reprendre là où la livraison s'est arrêtée. Un webhook en échec est réessayé.</span></p>
<p><button type="submit">Renvoyer</button></p>
</form>
<p><a href="${endpointPath(e.id)}/remove">Retirer ce webhook</a> · <a href="${WEBHOOKS_PATH}">Retour aux webhooks</a></p>`
}

export function deliveryLog (entries: readonly DeliveryLogEntry[]): SafeHtml {
  if (entries.length === 0) return html`<h2>Journal de livraison</h2><p>Aucune tentative pour l'instant : le premier envoi part au prochain événement de l'entreprise.</p>`
  return html`<h2>Journal de livraison</h2>
<table class="webhook-log"><caption>Les ${frNumber(entries.length)} dernières tentatives, la plus récente d'abord</caption>
<thead><tr><th scope="col">${parisHeader('Tentative')}</th><th scope="col">Événement</th><th scope="col">Résultat</th><th scope="col" class="num">Latence</th><th scope="col">${parisHeader('Prochain essai')}</th></tr></thead>
<tbody>${entries.map(l => html`<tr><td>${parisTime(l.atMs, 'slot')}</td><td>${l.eventId ? html`<code>${l.eventId}</code>` : parisTimeOrDash(undefined)}</td>
<td>${resultText(l)}</td><td class="num">${frNumber(l.latencyMs)} ms</td><td>${l.nextTryMs === undefined ? parisTimeOrDash(undefined) : parisTime(l.nextTryMs, 'slot')}</td></tr>`)}</tbody></table>`
}
