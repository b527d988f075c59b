/**
 * Admin page "Journal d'audit" (GET /admin/audit): the audit trail as `epx audit list`
 * prints it, filtered and paged (`audit-list.ts`), in French, times in Paris.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import type { AuditActor, AuditRecord } from '../../store/audit.ts'
import { auditDetailsText } from '../../store/audit.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html, type SafeHtml } from '../html.ts'
import { parisFieldMs, parisFieldValue, parisHeader, parisTime } from '../time.ts'
import { frNumber } from '../numbers.ts'
import { queryOf } from '../pages/paths.ts'
import { pagesNav } from '../pages/programmes-view.ts'
import { one, refuse } from '../pages/respond.ts'
import { ACTION_FAMILIES, ACTION_LABELS, loadAuditList, type AuditListModel } from './audit-list.ts'

const ADMIN = { config: { access: 'admin' as const } }
export const AUDIT_PATH = '/admin/audit'

/** Who acted, in French. */
function actorText (a: AuditActor): SafeHtml {
  switch (a.kind) {
    case 'company': return html`entreprise ${a.companyId}${a.tokenId ? html`<br><small>jeton <code>${a.tokenId}</code></small>` : ''}`
    case 'cli': return html`ligne de commande<br><small>${a.user}</small>`
    case 'console': return html`console<br><small>${a.user}</small>`
    case 'schedule': return html`publication planifiée`
    case 'host': return html`solveur`
  }
}

/** The outcome: `ok` said as such, anything else as the record words it. */
function outcomeCell (r: AuditRecord): SafeHtml {
  return r.outcome === 'ok' ? html`<td class="outcome-ok">ok</td>` : html`<td class="outcome-other"><strong>${r.outcome}</strong></td>`
}

function listHref (m: AuditListModel, change: Readonly<Record<string, string | undefined>>): string {
  const f = m.filter
  return `${AUDIT_PATH}?${queryOf({ company_id: f.companyId, action: f.action, since: f.since, until: f.until, q: f.q, ...change })}`
}

/** A time field's value: a day as given stays a day's start at 00:00 (what `datetime-local` shows). */
function fieldValue (text: string | undefined): string {
  if (!text) return ''
  const ms = parisFieldMs(text)
  return ms === undefined ? text : parisFieldValue(ms)
}

export function renderAuditList (m: AuditListModel): SafeHtml {
  const f = m.filter
  const option = (value: string, label: string, chosen: string | undefined) => html`<option value="${value}"${value === (chosen ?? '') ? html` selected` : ''}>${label}</option>`
  return html`<form method="get" action="${AUDIT_PATH}" class="chooser" role="search">
<label for="since">Depuis</label><input id="since" name="since" type="datetime-local" value="${fieldValue(f.since)}" required>
<label for="until">Jusqu'à</label><input id="until" name="until" type="datetime-local" value="${fieldValue(f.until)}">
<label for="company_id">Entreprise</label>
<select id="company_id" name="company_id">${option('', 'Toutes', f.companyId)}${m.companies.map(c => option(c, c, f.companyId))}</select>
<label for="action">Action</label>
<select id="action" name="action">${option('', 'Toutes', f.action)}
<optgroup label="Familles">${Object.entries(ACTION_FAMILIES).map(([v, label]) => option(v, `${label} (toutes)`, f.action))}</optgroup>
<optgroup label="Actions">${Object.entries(ACTION_LABELS).map(([v, label]) => option(v, label, f.action))}</optgroup></select>
<label for="q">Recherche</label>
<input id="q" name="q" type="search" value="${f.q}" placeholder="PRM, instruction, jeton, utilisateur">
<button type="submit">Afficher</button>
</form>
<p class="hint">Heure de Paris. Sans « Depuis », les sept derniers jours. Une entreprise : ce qu'elle a fait, et ce qui a été fait à son sujet.</p>
<table class="audit"><caption>Journal d'audit, le plus récent d'abord : ${frNumber(m.total)} enregistrement${m.total > 1 ? 's' : ''}${m.total > m.rows.length ? `, ${frNumber(m.rows.length)} sur cette page` : ''}</caption>
<thead><tr><th scope="col">${parisHeader('Quand')}</th><th scope="col">Action</th><th scope="col">Auteur</th><th scope="col">Objet</th><th scope="col">Résultat</th><th scope="col">Détails</th></tr></thead>
<tbody>${m.rows.length === 0 ? html`<tr><td colspan="6">Aucun enregistrement ne répond à ces critères.</td></tr>` : m.rows.map(r => html`<tr>
<td>${parisTime(r.at, 'slot')}</td><td>${ACTION_LABELS[r.action] ?? r.action}<br><small><code>${r.action}</code></small></td><td>${actorText(r.actor)}</td>
<td><code>${r.subject}</code></td>${outcomeCell(r)}<td class="details"><small>${auditDetailsText(r)}</small></td></tr>`)}</tbody></table>
${pagesNav(m.previous, m.next, m.paged, k => listHref(m, k))}`
}

export function auditAdmin (app: FastifyInstance, deps: ConsoleDeps): void {
  app.get(AUDIT_PATH, ADMIN, async (request, reply) => {
    const q = (name: string) => one(request.query, name)
    const loaded = loadAuditList(deps, {
      company_id: q('company_id'), action: q('action'), since: q('since'), until: q('until'), q: q('q'), after: q('after'), before: q('before'),
    })
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: 'Journal d\'audit', body: renderAuditList(loaded.model) })
  })
}
