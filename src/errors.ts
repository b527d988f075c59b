/**
 * The one error catalogue: each error is a code, a message template, and how each door
 * it can leave through renders it: an HTTP `status` and the response `headers` the code
 * always carries for the wire (`http/render-error.ts`), an `exit` code for the CLI
 * (`cli/main.ts`).
 * @module
 */
import { format } from 'node:util'

export interface ErrorSpec {
  /** HTTP status: wire codes only (operator codes never reach the wire). */
  readonly status?: number
  /** Exit code of `epx` when the error ends a command: codes that can leave through the CLI. */
  readonly exit?: number
  readonly message: string
  /** problem+json `type` slug and `title`, for the outbound door. */
  readonly slug?: string
  readonly title?: string
  /** The problem's `code` when it differs from the catalogue's (the outbound door's name for it). */
  readonly problemCode?: string
  /** The error's `details` are the problem's extension members (RFC 9457 §3.2), not `invalid_params`. */
  readonly extensions?: boolean
  /**
   * A wire code's meaning to a BSP and what to do about it, in English and in French: the
   * OpenAPI description's words for it and its page under `{base_url}/errors/<slug>`
   * (`http/error-pages.ts`), one line each.
   */
  readonly help?: { readonly en: string; readonly fr: string }
  /**
   * Response headers the code always carries, whoever throws it (lower-case names):
   * fixed, or made from the error's arguments (those of `message`). A header the thrower
   * passes wins.
   */
  readonly headers?: Readonly<Record<string, string>> | ((...args: any[]) => Readonly<Record<string, string>>)
}

/**
 * RFC 6750 §3 and §3.1: the Bearer challenge of every 401 and of a 403 for a missing
 * scope. `error` (and the scope needed) only once a token was sent, so a client tells
 * "send a token" from "this token is dead".
 */
function bearerChallenge (error?: 'invalid_token' | 'insufficient_scope', scope?: string): { 'www-authenticate': string } {
  const params = error === undefined ? '' : `, error="${error}"${scope === undefined ? '' : `, scope="${scope}"`}`
  return { 'www-authenticate': `Bearer realm="epx"${params}` }
}

/** UNAUTHORIZED's headers for a request that sent no credentials at all (RFC 6750 §3.1: no `error`). */
export const NO_CREDENTIALS_HEADERS: Readonly<Record<string, string>> = bearerChallenge()

export const catalogue = {
  // Wire codes: exactly the contract's and DECISIONS.md's.
  INVALID_PROGRAMME_SOUTIRAGE_REQUEST: { status: 400, message: 'request validation failed: %s', slug: 'invalid-request', title: 'Bad Request', help: { en: 'the programme was refused as a whole (nothing stored); `error.details` maps each faulty field (JSON Pointer) to what to fix (a slot whose power, energie_kwh * 3600 / slot_duration_secs, is above the service\'s sanity bound, 100,000 kW per site by default, at its energie_kwh). Fix and send again.', fr: 'le programme est refusé en entier (rien n\'est enregistré) ; `error.details` associe à chaque champ fautif (JSON Pointer) ce qu\'il faut corriger. Corrigez, puis renvoyez-le.' } },
  INVALID_QUERY: { status: 400, message: 'invalid query parameters: %s', slug: 'invalid-request', title: 'Bad Request', help: { en: 'a query parameter missing, repeated, unknown or malformed (site_id, target_date; apres, limite, attente for the events); `invalid_params` (outbound) or `error.details` (status read) names each. Fix the request; do not retry as is.', fr: 'un paramètre absent, répété, inconnu ou mal formé (site_id, target_date ; apres, limite, attente pour les événements) ; `invalid_params` (ou `error.details`) nomme chacun. Corrigez la requête ; la renvoyer telle quelle n\'y changera rien.' } },
  UNAUTHORIZED: { status: 401, message: '%s', slug: 'unauthorized', title: 'Unauthorized', headers: bearerChallenge('invalid_token'), help: { en: 'no Bearer token, or one unknown, expired or revoked (`error="invalid_token"` in WWW-Authenticate). Get a new token; retrying will not help.', fr: 'pas de jeton Bearer, ou un jeton inconnu, expiré ou révoqué. Obtenez un nouveau jeton ; réessayer n\'y changera rien.' } },
  MTLS_REQUIRED: { status: 403, message: '%s', slug: 'mtls-required', title: 'Forbidden', help: { en: 'no client certificate, one the service\'s CA did not issue or has revoked, or one not bound to the token\'s company. Present your company\'s certificate.', fr: 'pas de certificat client, un certificat que l\'autorité du service n\'a pas émis ou a révoqué, ou qui n\'est pas celui de la société du jeton. Présentez le certificat de votre société.' } },
  COMPANY_SUSPENDED: { status: 403, message: 'company %s is suspended', slug: 'company-suspended', title: 'Forbidden', help: { en: 'your company is suspended by the service. Contact the service operator.', fr: 'votre société est suspendue par le service. Contactez l\'exploitant du service.' } },
  SCOPE_DENIED: { status: 403, message: "token lacks scope '%s'", slug: 'scope-denied', title: 'Forbidden', headers: (scope: string) => bearerChallenge('insufficient_scope', scope), help: { en: 'the token lacks this endpoint\'s scope (named in WWW-Authenticate). Use a token with that scope.', fr: 'le jeton n\'a pas la portée de cet appel (nommée dans WWW-Authenticate). Utilisez un jeton qui l\'a.' } },
  UNKNOWN_PATH: { status: 404, message: 'no resource at %s; check the base URL and the path (/api/v0.5/energy-programs/besoins-agreges, /api/v0.5/energy-programs/programme-soutirage, /api/v0.5/energy-programs/realise, /api/v0.5/energy-programs/sites or /api/v0.5/energy-programs/evenements)', slug: 'unknown-path', title: 'Not Found', help: { en: 'no such path (a typo, or a wrong base URL or version segment /api/v0.5/). Fix the path; retrying as is will not help.', fr: 'ce chemin n\'existe pas (une faute de frappe, ou une mauvaise URL de base ou version /api/v0.5/). Corrigez le chemin ; réessayer tel quel n\'y changera rien.' } },
  NOT_PUBLISHED: { status: 404, message: 'no Besoins_Agreges is published for site %s on %s; retry in 5 minutes at the earliest', slug: 'not-found', title: 'Not Found', headers: { 'retry-after': '300' }, help: { en: 'nothing published for this site and day (yet), or a site outside your perimeter. Retry after Retry-After (300 s) at the earliest.', fr: 'rien n\'est (encore) publié pour ce site et ce jour, ou le site est hors de votre périmètre. Réessayez après Retry-After (300 s) au plus tôt.' } },
  NOTHING_TO_COMPARE: { status: 404, message: 'nothing to compare for site %s on %s: no programme of yours in force that day and no meter value; meter values arrive as quarter-hours close', slug: 'not-found', title: 'Not Found', help: { en: 'no programme of yours in force and no meter value for this site and day, or a site outside your perimeter. Meter values arrive as quarter-hours close.', fr: 'aucun programme de votre société en vigueur et aucune mesure pour ce site et ce jour, ou un site hors de votre périmètre. Les mesures arrivent à la fin de chaque quart d\'heure.' } },
  CURSOR_EXPIRED: { status: 410, message: 'apres=%s is before the oldest event kept (events are kept events.retentionDays): read the state again (besoins-agreges, programme status, realise), then continue with apres=%s', slug: 'cursor-expired', title: 'Gone', extensions: true, help: { en: 'the cursor `apres` is older than the oldest event kept: events were missed. Read the state again (besoins-agreges, the status read, realise), then go on with `apres` = the problem\'s `suivant`; `oldest_id` is the oldest event kept.', fr: 'le curseur `apres` est plus ancien que le plus ancien événement conservé : des événements ont été manqués. Relisez l\'état (besoins-agreges, la lecture des statuts, realise), puis reprenez avec `apres` = le `suivant` du problème ; `oldest_id` est le plus ancien événement conservé.' } },
  METHOD_NOT_ALLOWED: { status: 405, message: '%s is not allowed here; allowed: %s', slug: 'method-not-allowed', title: 'Method Not Allowed', headers: (_method: string, allow: string) => ({ allow }), help: { en: 'the path does not serve this method; `Allow` lists those it does.', fr: 'ce chemin ne sert pas cette méthode ; `Allow` donne celles qu\'il sert.' } },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'body exceeds the limit of %d bytes', slug: 'payload-too-large', title: 'Payload Too Large', help: { en: 'the body is over the service\'s limit (default 10 MiB). Split the programme by sites.', fr: 'le corps dépasse la limite du service (10 Mio par défaut). Découpez le programme par sites.' } },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: "Content-Type must be application/json, got '%s'", slug: 'unsupported-media-type', title: 'Unsupported Media Type', help: { en: 'Content-Type must be application/json.', fr: 'le Content-Type doit être application/json.' } },
  RATE_LIMITED: { status: 429, message: 'company %s is over its %s request budget (%d a second, bursts of %d); retry after %d s, then pace requests by the RateLimit header', slug: 'rate-limited', title: 'Too Many Requests', headers: (_company: string, _kind: string, _rate: number, _burst: number, retryAfter: number) => ({ 'retry-after': String(retryAfter) }), help: { en: 'your company is over its request budget (GET and HEAD together, or POST); nothing was done. Wait Retry-After seconds, then pace your requests by the RateLimit header (r: requests left, t: seconds until the budget is whole). A POST over budget is refused before its body is read: send it again after Retry-After.', fr: 'votre société a dépassé son budget de requêtes (GET et HEAD ensemble, ou POST) ; rien n\'a été fait. Attendez Retry-After secondes, puis réglez votre rythme sur l\'en-tête RateLimit ; un POST refusé peut être renvoyé tel quel.' } },
  QUOTA_EXCEEDED: { status: 429, message: 'company %s is over its storage quota of %s a day: %s of programmes accepted today (%s, Europe/Paris)%s; the quota resets at 00:00 Paris time (%s), retry after %d s', slug: 'quota-exceeded', title: 'Too Many Requests', headers: (_company: string, _quota: string, _used: string, _day: string, _this: string, _resetAt: string, retryAfter: number) => ({ 'retry-after': String(retryAfter) }), help: { en: 'your company has had its storage quota of programmes accepted today (Europe/Paris), or this programme would cross it; nothing of it was written. Send nothing before Retry-After seconds (the next Paris day, when the count starts afresh); the message says the quota, today\'s use and when it resets. A programme sent in a loop is the usual cause; if the volume is legitimate, ask the service operator for a larger quota.', fr: 'votre société a atteint son quota de stockage de programmes acceptés aujourd\'hui (heure de Paris), ou ce programme le dépasserait ; rien n\'en a été enregistré. N\'envoyez rien avant Retry-After secondes (le jour suivant à Paris, où le compte repart de zéro) ; le message donne le quota, l\'usage du jour et l\'heure de remise à zéro.' } },
  NO_STORE: { status: 503, exit: 1, message: 'storage unavailable; retry in a few seconds', slug: 'no-store', title: 'Service Unavailable', problemCode: 'STORE_UNAVAILABLE', headers: { 'retry-after': '5' }, help: { en: 'the service\'s storage cannot answer for now; nothing was stored. Retry after Retry-After (5 s), with backoff; re-sending the same programme is safe (same emitted_at, same instruction ids).', fr: 'le stockage du service ne répond pas pour l\'instant ; rien n\'a été enregistré. Réessayez après Retry-After (5 s), en espaçant ; renvoyer le même programme est sans risque.' } },
  INTERNAL: { status: 500, message: 'internal error; the request was not applied', slug: 'internal', title: 'Internal Server Error', help: { en: 'an unexpected fault of the service; nothing was applied. Retry later, and report it if it persists.', fr: 'une panne imprévue du service ; rien n\'a été appliqué. Réessayez plus tard, et signalez-la si elle dure.' } },

  // Operator-facing codes (host, CLI, configuration): never on the wire.
  EPX_CONFIG_INVALID: { exit: 1, message: 'invalid configuration: %s' },
  EPX_HOST_API_MISMATCH: { exit: 1, message: 'host API %s does not satisfy the plugin range %s' },
  EPX_NODE_UNSUPPORTED: { exit: 1, message: 'epx needs Node.js %s, and this process runs Node.js %s: run the host on a Node.js in that range (older ones lack HTTP and TLS fixes epx relies on)' },
  EPX_MANIFEST_INVALID: { exit: 1, message: 'invalid plugin manifest %s: %s' },
  EPX_STORE_OPEN_FAILED: { exit: 1, message: 'cannot open the store at %s: %s' },
  EPX_STORE_SCHEMA_MISSING: { exit: 1, message: 'the PostgreSQL store (%s) holds no epx schema: run `epx store migrate` to create it (activation wrote nothing)' },
  EPX_STORE_SCHEMA_OLD: { exit: 1, message: 'the PostgreSQL store (%s) is at epx schema version %d and this epx needs version %d: run `epx store migrate` to upgrade it (activation wrote nothing)' },
  EPX_STORE_SCHEMA_NEWER: { exit: 1, message: 'the PostgreSQL store (%s) is at epx schema version %d, newer than the %d this epx knows: run the epx that migrated it, or a newer one (nothing was written)' },
  EPX_STORE_SCHEMA_FOREIGN: { exit: 1, message: 'the PostgreSQL store (%s) holds tables that are not epx\'s (%s): point store.postgres at an empty database of its own, then run `epx store migrate` (nothing was written)' },
  EPX_LISTEN_FAILED: { exit: 1, message: 'cannot listen on %s:%d: %s' },
  EPX_TLS_FILES: { exit: 1, message: 'cannot read TLS file %s: %s (run `epx init`)' },
  EPX_CRL_INVALID: { exit: 1, message: 'cannot use the client CRL %s (api.tls.crlFile): %s' },
  EPX_USAGE: { exit: 2, message: '%s' },
  EPX_NOT_FOUND: { exit: 1, message: '%s' },
  EPX_CONFLICT: { exit: 1, message: '%s' },
  EPX_BACKUP_FAILED: { exit: 1, message: 'cannot back up the store to %s: %s (nothing was written there)' },
  EPX_STORE_CONNECT_FAILED: { exit: 1, message: 'cannot connect to PostgreSQL (%s): %s' },
  EPX_STORE_COPY_FAILED: { exit: 1, message: 'cannot copy the store into PostgreSQL (%s): %s' },
  EPX_WEBHOOK_REFUSED: { exit: 1, message: 'webhook endpoint %s refused: %s' },
  EPX_WEBHOOK_ECHO_FAILED: { exit: 1, message: 'webhook endpoint %s failed the echo check: %s; it must answer GET <url>?echo=<value> with 200 and the value alone as its body (DECISIONS.md "Events for BSPs"), then add it again' },
  EPX_STORE_VERIFY_FAILED: { exit: 1, message: 'the replica %s is not confirmed equal to PostgreSQL (%s): %s' },
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof catalogue

/**
 * The codes each API door can answer, in the catalogue's order: the OpenAPI description
 * (test/openapi/describe.ts) and docs/errors.md list these, and the door renders them.
 * `status` is the programme status read (GET on the inbound path), rendered as inbound errors;
 * `realise` the realisation read and `evenements` the events feed, rendered as outbound problems; `sites` the perimeter read
 * (any scope: no SCOPE_DENIED, no query: no INVALID_QUERY), rendered as outbound problems.
 */
export const DOOR_CODES = {
  outbound: ['INVALID_QUERY', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'NOT_PUBLISHED', 'RATE_LIMITED', 'NO_STORE', 'INTERNAL'],
  inbound: ['INVALID_PROGRAMME_SOUTIRAGE_REQUEST', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'QUOTA_EXCEEDED', 'NO_STORE', 'INTERNAL'],
  status: ['INVALID_QUERY', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'RATE_LIMITED', 'NO_STORE', 'INTERNAL'],
  realise: ['INVALID_QUERY', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'NOTHING_TO_COMPARE', 'RATE_LIMITED', 'NO_STORE', 'INTERNAL'],
  sites: ['UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'RATE_LIMITED', 'NO_STORE', 'INTERNAL'],
  evenements: ['INVALID_QUERY', 'UNAUTHORIZED', 'MTLS_REQUIRED', 'COMPANY_SUSPENDED', 'SCOPE_DENIED', 'CURSOR_EXPIRED', 'RATE_LIMITED', 'NO_STORE', 'INTERNAL'],
} as const satisfies Record<string, readonly ErrorCode[]>

/** The `code` of an outbound problem (DECISIONS.md "Outbound": every problem carries one). */
export function problemCodeOf (code: ErrorCode): string {
  return (catalogue[code] as ErrorSpec).problemCode ?? code
}

export class EpxError extends Error {
  readonly code: ErrorCode
  /** The HTTP status of a wire code; 500 for an operator code (an HTTP door answers it INTERNAL). */
  readonly status: number
  /** JSON Pointer to message (inbound 400), or name to reason (outbound 400). */
  readonly details?: Readonly<Record<string, string>>
  /** Response headers the door must send: the code's own (the catalogue's), then the thrower's. */
  readonly headers?: Readonly<Record<string, string>>

  constructor (code: ErrorCode, args: readonly unknown[] = [], opts: {
    details?: Record<string, string>
    headers?: Record<string, string>
    cause?: unknown
  } = {}) {
    super(format(catalogue[code].message, ...args), { cause: opts.cause })
    this.name = 'EpxError'
    this.code = code
    const spec: ErrorSpec = catalogue[code]
    this.status = spec.status ?? 500
    this.details = opts.details
    const own = typeof spec.headers === 'function' ? spec.headers(...args) : spec.headers
    this.headers = own && opts.headers ? { ...own, ...opts.headers } : own ?? opts.headers
  }
}

/** Match on the code, never on the class: host and plugin may hold different copies. */
export function isEpxError (e: unknown): e is EpxError {
  return typeof e === 'object' && e !== null &&
    typeof (e as { code?: unknown }).code === 'string' &&
    Object.hasOwn(catalogue, (e as { code: string }).code)
}
