/**
 * The "Limites" section of an admin's company page (DECISIONS.md "Rate limits and
 * quotas"): the company's request budgets and storage quota, its own or the
 * configuration's, today's use of the quota, and the form that changes them, the
 * console's `epx company limits` (audited `company.limits`, post/redirect/get).
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { bytesText } from '../../apply/quota.ts'
import type { CompanyRecord, RequestBudget } from '../../store/companies.ts'
import { fieldText } from '../access.ts'
import type { ConsoleDeps } from '../deps.ts'
import { html, type SafeHtml } from '../html.ts'
import { csrfField } from '../layout.ts'
import { parisTime } from '../time.ts'
import type { Viewer } from '../viewer.ts'
import { auditConsole } from '../audit.ts'

const ADMIN = { config: { access: 'admin' as const } }
/** The bounds of `epx company limits` and of the configuration. */
const MAX_REQUESTS = 1_000_000
const MAX_QUOTA = 2 ** 50
const UNITS: Readonly<Record<string, number>> = { '': 1, Kio: 2 ** 10, Mio: 2 ** 20, Gio: 2 ** 30, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 }

function budgetText (own: RequestBudget | undefined, config: RequestBudget): string {
  const b = own ?? config
  return `${b.perSecond} par seconde, rafales de ${b.burst}${own ? '' : ' (configuration)'}`
}

/** The section: what applies, today's use, and the form (its fields empty where the configuration's applies). */
export function limitsSection (deps: ConsoleDeps, viewer: Viewer, c: CompanyRecord): SafeHtml {
  const { rateLimit, quota } = deps.limits
  const day = quota.dayOf(c, deps.clock.now())
  const share = Math.min(100, Math.round(day.used.bytes / day.limit * 1000) / 10)
  const own = c.rateLimit
  const field = (id: string, label: string, value: number | undefined, hint: string) => html`<p><label for="${id}">${label}</label>
<input id="${id}" name="${id}" inputmode="decimal" value="${value === undefined ? '' : String(value)}" placeholder="${hint}" aria-describedby="limits-hint"></p>`
  return html`<h2>Limites</h2>
<table class="limits"><tbody>
<tr><th scope="row">Requêtes GET et HEAD</th><td>${budgetText(own?.get, rateLimit.get)}</td></tr>
<tr><th scope="row">Requêtes POST</th><td>${budgetText(own?.post, rateLimit.post)}</td></tr>
<tr><th scope="row">Quota de stockage</th><td>${bytesText(day.limit)} par jour${day.own ? '' : ' (configuration)'}</td></tr>
<tr><th scope="row">Utilisé aujourd'hui</th><td id="quota-today">${bytesText(day.used.bytes)} (${share} %), ${day.used.programmes} programme${day.used.programmes > 1 ? 's' : ''} accepté${day.used.programmes > 1 ? 's' : ''} le ${day.date} ;
remis à zéro à minuit (heure de Paris, ${parisTime(day.resetsAtMs)})</td></tr>
</tbody></table>
<form method="post" action="/admin/companies/${c.id}/limits">${csrfField(viewer)}
${field('getPerSecond', 'GET et HEAD : requêtes par seconde', own?.get?.perSecond, String(rateLimit.get.perSecond))}
${field('getBurst', 'GET et HEAD : rafale', own?.get?.burst, String(rateLimit.get.burst))}
${field('postPerSecond', 'POST : requêtes par seconde', own?.post?.perSecond, String(rateLimit.post.perSecond))}
${field('postBurst', 'POST : rafale', own?.post?.burst, String(rateLimit.post.burst))}
${field('quotaBytes', 'Quota : octets par jour', c.quotaBytesPerDay, String(quota.limitOf({})))}
<p id="limits-hint" class="hint">Vide : la valeur de la configuration. Le quota accepte Kio, Mio ou Gio (par exemple 256Mio). Appliqué dès la prochaine requête de l'entreprise.</p>
<p><button type="submit">Enregistrer les limites</button></p>
</form>`
}

/** A budget from its two fields: both empty, the configuration's (undefined); a problem in French otherwise. */
function readBudget (label: string, rate: string, burst: string): { budget: RequestBudget | undefined } | { problem: string } {
  if (rate === '' && burst === '') return { budget: undefined }
  const perSecond = Number(rate.replace(',', '.'))
  const size = Number(burst)
  if (rate === '' || burst === '' || !(perSecond > 0 && perSecond <= MAX_REQUESTS) || !(Number.isInteger(size) && size >= 1 && size <= MAX_REQUESTS)) {
    return { problem: `${label} : indiquez les deux champs, des requêtes par seconde au-dessus de 0 et une rafale entière d'au moins 1, au plus ${MAX_REQUESTS} chacun ; ou laissez-les vides pour la configuration.` }
  }
  return { budget: { perSecond, burst: size } }
}

function readQuota (text: string): { bytes: number | undefined } | { problem: string } {
  if (text === '') return { bytes: undefined }
  const m = /^(\d{1,16})\s*(Kio|Mio|Gio|KiB|MiB|GiB)?$/.exec(text)
  const bytes = m ? Number(m[1]) * UNITS[m[2] ?? '']! : NaN
  if (!(bytes >= 1 && bytes <= MAX_QUOTA)) return { problem: `Quota : un nombre entier d'octets de 1 à ${MAX_QUOTA} (1 Pio), suivi ou non de Kio, Mio ou Gio ; ou vide pour la configuration.` }
  return { bytes }
}

/** The route of the section's form. `page` renders the company page again with a problem (400), `saved` redirects with a notice. */
export function limitsRoute (app: FastifyInstance, deps: ConsoleDeps, o: {
  companyOf(request: FastifyRequest): CompanyRecord | undefined
  notFound(reply: FastifyReply): unknown
  page(reply: FastifyReply, viewer: Viewer, c: CompanyRecord, problem: string): unknown
  saved(request: FastifyRequest, reply: FastifyReply, c: CompanyRecord, notice: string): unknown
}): void {
  app.post('/admin/companies/:id/limits', ADMIN, async (request, reply) => {
    const c = o.companyOf(request)
    if (!c) return o.notFound(reply)
    const f = (name: string) => fieldText(request.body, name)
    const get = readBudget('GET et HEAD', f('getPerSecond'), f('getBurst'))
    const post = readBudget('POST', f('postPerSecond'), f('postBurst'))
    const quota = readQuota(f('quotaBytes'))
    const problem = ('problem' in get ? get.problem : undefined) ?? ('problem' in post ? post.problem : undefined) ?? ('problem' in quota ? quota.problem : undefined)
    if (problem || 'problem' in get || 'problem' in post || 'problem' in quota) return o.page(reply.code(400), request.viewer!, c, problem!)
    const user = request.viewer!.username
    const next = await deps.companies.update(c.id, r => {
      const { rateLimit: _r, quotaBytesPerDay: _q, ...rest } = r
      const budgets = { ...(get.budget ? { get: get.budget } : {}), ...(post.budget ? { post: post.budget } : {}) }
      return { ...rest, ...(Object.keys(budgets).length ? { rateLimit: budgets } : {}), ...(quota.bytes !== undefined ? { quotaBytesPerDay: quota.bytes } : {}) }
    }, { actor: { kind: 'console', user } })
    auditConsole(deps, user, 'company.limits', c.id, 'ok', { rateLimit: next.rateLimit ?? 'default', quotaBytesPerDay: next.quotaBytesPerDay ?? 'default' })
    return o.saved(request, reply, next, 'Limites enregistrées.')
  })
}
