/**
 * "Journal d'audit": who did what, the records `epx audit list` reads (`store/audit.ts`),
 * found by GET query parameters so a URL can be shared: `company_id` (as actor, subject or
 * named in the details), `action` (an action or a family, `token.`), `since` / `until` (a
 * Paris wall time `2026-11-21T13:29` or a Paris day; the last seven days by default), `q`
 * (text in the subject or the details: a site's PRM, an instruction, a token, a user),
 * newest first, in pages by key (`after` / `before`, `pages/keyset.ts`).
 * @module
 */
import type { AuditAction, AuditRecord } from '../../store/audit.ts'
import { auditDetailsText } from '../../store/audit.ts'
import { addDays, parisDateOf } from '../../contract/paris-day.ts'
import type { ConsoleDeps } from '../deps.ts'
import { parisFieldMs } from '../time.ts'
import { cursorOf, keysetPage } from '../pages/keyset.ts'
import type { Loaded } from '../pages/besoins-model.ts'

/** Every action in French; a Record, so a new action cannot go unnamed. */
export const ACTION_LABELS: Readonly<Record<AuditAction, string>> = {
  'programme.accepted': 'programme accepté',
  'programme.rejected': 'programme refusé',
  'instruction.withdrawn': 'instructions retirées',
  'publication.run': 'publication',
  'token.created': 'jeton créé',
  'token.revoked': 'jeton révoqué',
  'token.refused': 'jeton refusé (révoqué ou expiré)',
  'company.created': 'entreprise créée',
  'company.suspended': 'entreprise suspendue',
  'company.resumed': 'entreprise réactivée',
  'company.rebound': 'entreprise modifiée (certificat, périmètre)',
  'company.limits': 'limites changées (débit, quota)',
  'company.rate-limited': 'débit limité (429)',
  'company.quota-exceeded': 'quota de stockage atteint (429)',
  'user.login': 'connexion',
  'user.login-failed': 'connexion refusée',
  'user.logout': 'déconnexion',
  'user.changed': 'utilisateur modifié',
  'user.unlocked': 'verrou d\'adresse levé',
  'webhook.added': 'webhook ajouté',
  'webhook.removed': 'webhook supprimé',
  'webhook.rotated': 'secret de webhook renouvelé',
  'webhook.redelivered': 'webhook relancé',
  'webhook.failing': 'webhook en échec (24 h sans livraison)',
}

/** The families an action filter may name (`token.`: every token action). */
export const ACTION_FAMILIES: Readonly<Record<string, string>> = {
  'programme.': 'programmes',
  'instruction.': 'instructions',
  'publication.': 'publications',
  'token.': 'jetons',
  'company.': 'entreprises',
  'user.': 'utilisateurs de la console',
  'webhook.': 'webhooks',
}

/** How far back the list reaches when no `since` is given. */
const DEFAULT_DAYS = 7

export interface AuditListQuery {
  readonly company_id?: string
  readonly action?: string
  readonly since?: string
  readonly until?: string
  readonly q?: string
  readonly after?: string
  readonly before?: string
}

export interface AuditFilter {
  readonly companyId?: string
  readonly action?: string
  /** As given (or the default), for the form and the links. */
  readonly since: string
  readonly until?: string
  readonly q: string
}

export interface AuditListModel {
  readonly filter: AuditFilter
  readonly companies: readonly string[]
  /** Records the filter selects, over every page. */
  readonly total: number
  readonly rows: readonly AuditRecord[]
  readonly previous?: string
  readonly next?: string
  readonly paged: boolean
}

export function loadAuditList (deps: Pick<ConsoleDeps, 'audit' | 'companies' | 'clock'>, q: AuditListQuery): Loaded<AuditListModel> {
  const since = q.since || addDays(parisDateOf(deps.clock.now()), 1 - DEFAULT_DAYS)
  const sinceMs = parisFieldMs(since)
  if (sinceMs === undefined) return { status: 400, message: `Depuis « ${since} » : une date (AAAA-MM-JJ) ou une date et une heure de Paris (AAAA-MM-JJTHH:MM).` }
  const untilMs = q.until ? parisFieldMs(q.until, true) : undefined
  if (q.until && untilMs === undefined) return { status: 400, message: `Jusqu'à « ${q.until} » : une date (AAAA-MM-JJ) ou une date et une heure de Paris (AAAA-MM-JJTHH:MM).` }
  const action = q.action || undefined
  if (action !== undefined && !(action in ACTION_LABELS) && !(action in ACTION_FAMILIES)) {
    return { status: 400, message: `Action « ${action} » inconnue : ${[...Object.keys(ACTION_FAMILIES), ...Object.keys(ACTION_LABELS)].join(', ')}, ou rien pour toutes.` }
  }
  const cursor = cursorOf(q.after, q.before)
  if ('error' in cursor) return { status: 400, message: cursor.error }
  const filter: AuditFilter = {
    ...(q.company_id ? { companyId: q.company_id } : {}),
    ...(action ? { action } : {}),
    since,
    ...(q.until ? { until: q.until } : {}),
    q: (q.q ?? '').trim(),
  }
  const needle = filter.q.toLowerCase()
  const keyed = deps.audit.keyed({
    sinceMs, ...(untilMs === undefined ? {} : { untilMs }), ...(filter.companyId ? { companyId: filter.companyId } : {}), ...(action ? { action } : {}),
  }).filter(k => needle === '' || mentions(k.record, needle))
  const page = keysetPage(keyed, k => k.key, true, cursor)
  return {
    status: 200,
    model: {
      filter, companies: deps.companies.list().map(c => c.id), total: keyed.length, rows: page.rows.map(k => k.record),
      previous: page.previous, next: page.next, paged: q.after !== undefined || q.before !== undefined,
    },
  }
}

/** Whether the text names something of the record: its subject, its actor or its details (the sites a programme listed). */
function mentions (r: AuditRecord, needle: string): boolean {
  const actor = r.actor.kind === 'company' ? `${r.actor.companyId} ${r.actor.tokenId ?? ''}` : 'user' in r.actor ? r.actor.user : ''
  return `${r.subject} ${actor} ${auditDetailsText(r, Infinity)}`.toLowerCase().includes(needle)
}
