/**
 * Admin page "Publier maintenant": what `epx publish` does, through the plugin's own
 * publisher (so runs never overlap with the schedule's), with its report. The POST
 * publishes and redirects (post/redirect/get): the report reaches the page in the
 * session's flash, once, so a reload shows the form and publishes nothing again.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { addDays, isCalendarDate, parisDateOf } from '../../contract/paris-day.ts'
import { fieldText } from '../access.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html, type SafeHtml } from '../html.ts'
import { csrfField } from '../layout.ts'
import { setFlash, takeFlash } from '../session.ts'
import { parisHeader, parisTimeOrDash } from '../time.ts'
import type { Viewer } from '../viewer.ts'

const ADMIN = { config: { access: 'admin' as const } }
const PAGE = '/admin/publish'

/** What the run leaves for the page it redirects to. */
interface Report {
  readonly date: string
  readonly published: ReadonlyArray<{ readonly siteId: string; readonly emittedAt: string; readonly etag: string }>
  readonly failed: ReadonlyArray<{ readonly siteId: string; readonly reason: string }>
}

/** "1 site publié", "3 sites publiés", "aucun site publié". */
function sites (n: number, one: string, many: string): string {
  return n === 0 ? `Aucun site ${one}` : n === 1 ? `1 site ${one}` : `${n} sites ${many}`
}

/** `2026-11-22` as the console writes a day: `22/11/2026`. */
function dayText (date: string): string {
  return `${date.slice(8, 10)}/${date.slice(5, 7)}/${date.slice(0, 4)}`
}

function form (viewer: Viewer, date: string): SafeHtml {
  return html`<form method="post" action="/admin/publish">${csrfField(viewer)}
<p><label for="date">Jour (Europe/Paris)</label><input id="date" name="date" type="date" required value="${date}"></p>
<p class="hint">Publie une nouvelle révision des Besoins agrégés de ce jour pour tous les sites gérés par le solveur.</p>
<p><button type="submit">Publier maintenant</button></p>
</form>`
}

export function publishAdmin (app: FastifyInstance, deps: ConsoleDeps): void {
  const tomorrow = () => addDays(parisDateOf(deps.clock.now()), 1)

  app.get(PAGE, ADMIN, async (request, reply) => {
    const report = await takeFlash<Report>(request, deps, PAGE)
    if (!report) return reply.page({ title: 'Publier maintenant', body: form(request.viewer!, tomorrow()) })
    return reply.page({
      title: 'Publier maintenant',
      body: html`
<p class="${report.failed.length ? 'error' : 'notice'}" role="status">${sites(report.published.length, 'publié', 'publiés')} pour le ${dayText(report.date)} ; ${report.failed.length === 0 ? 'aucun en échec' : `${report.failed.length} en échec`}.</p>
${report.published.length ? html`<table><caption>Publiés</caption><thead><tr><th scope="col">Site</th><th scope="col">${parisHeader('Émis le')}</th><th scope="col">ETag</th></tr></thead>
<tbody>${report.published.map(p => html`<tr><td><code>${p.siteId}</code></td><td>${parisTimeOrDash(p.emittedAt, 'slot')}</td><td><code>${p.etag}</code></td></tr>`)}</tbody></table>` : ''}
${report.failed.length ? html`<table><caption>En échec</caption><thead><tr><th scope="col">Site</th><th scope="col">Raison</th></tr></thead>
<tbody>${report.failed.map(f => html`<tr><td>${f.siteId}</td><td>${f.reason}</td></tr>`)}</tbody></table>` : ''}
<h2>Publier un autre jour</h2>
${form(request.viewer!, report.date)}`,
    })
  })

  app.post('/admin/publish', ADMIN, async (request, reply) => {
    const viewer = request.viewer!
    const date = fieldText(request.body, 'date')
    if (!isCalendarDate(date)) {
      return reply.code(400).page({ title: 'Publier maintenant', body: html`<p class="error" role="alert">Date invalide : choisissez un jour (AAAA-MM-JJ).</p>${form(viewer, tomorrow())}` })
    }
    const today = parisDateOf(deps.clock.now())
    if (date < today && fieldText(request.body, 'confirmed') !== 'yes') {
      return reply.page({
        title: 'Publier maintenant',
        body: html`<p class="warning" role="alert">Le ${dayText(date)} est déjà passé (nous sommes le ${dayText(today)}, heure de Paris) :
une nouvelle révision de ses Besoins agrégés ne sert plus à programmer ce jour, et les BSP qui la liraient y verraient des besoins d'un jour révolu.</p>
<form method="post" action="/admin/publish">${csrfField(viewer)}<input type="hidden" name="date" value="${date}"><input type="hidden" name="confirmed" value="yes">
<p><button type="submit" class="danger">Publier quand même le ${dayText(date)}</button> <a href="/admin/publish">Annuler</a></p></form>`,
      })
    }
    const report = await deps.publisher.publish({ targetDate: date, trigger: 'console', user: viewer.username })
    deps.log.info({ targetDate: date, published: report.published.length, failed: report.failed.length, by: viewer.username }, 'console: publish')
    const shown: Report = {
      date,
      published: report.published.map(p => ({ siteId: p.siteId, emittedAt: p.emittedAt, etag: p.etag })),
      failed: report.failed.map(f => ({ siteId: f.siteId, reason: f.reason })),
    }
    await setFlash(request, deps, PAGE, shown)
    return reply.redirect(PAGE, 303)
  })
}
