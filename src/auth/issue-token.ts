/**
 * Creating a token: the one code path `epx token`, `epx demo`
 * and the console's "Jetons d'accès" page share (DECISIONS.md "Authentication and tenancy").
 * @module
 */
import { EpxError } from '../errors.ts'
import { openCompanies } from '../store/companies.ts'
import type { Store } from '../store/open-store.ts'
import { openTokens, type TokenRecord } from '../store/tokens.ts'
import { openAudit, type AuditActor } from '../store/audit.ts'
import { hashToken, newTokenId, newTokenSecret } from './tokens.ts'
import type { Scope } from '../contract/scopes.ts'

export interface CreatedToken {
  readonly record: TokenRecord
  /** The secret: shown once, never stored. */
  readonly token: string
}

/** Creates and stores a token for an existing company, and says who made it in the audit trail. */
export async function createToken (store: Store, actor: AuditActor, companyId: string, scopes: readonly Scope[], ttlMs?: number, nowMs = Date.now(), label?: string): Promise<CreatedToken> {
  if (!openCompanies(store).get(companyId)) {
    throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}'; add it first with 'epx company add ${companyId} --name NAME'`])
  }
  const token = newTokenSecret()
  const record: TokenRecord = {
    id: newTokenId(),
    hash: hashToken(token),
    companyId,
    scopes: [...new Set(scopes)],
    createdAt: new Date(nowMs).toISOString(),
    ...(creatorOf(actor) ? { createdBy: creatorOf(actor) } : {}),
    ...(label ? { label } : {}),
    ...(ttlMs === undefined ? {} : { expiresAt: new Date(nowMs + ttlMs).toISOString() }),
  }
  await openTokens(store).add(record)
  await openAudit(store).append({ actor, action: 'token.created', subject: record.id, outcome: 'ok', details: { companyId, scopes: record.scopes, expiresAt: record.expiresAt ?? null } }, nowMs)
  return { record, token }
}


/** Who made a token, as its list shows it: a console user, or a CLI user with `(CLI)`. */
function creatorOf (actor: AuditActor): string | undefined {
  if (actor.kind === 'console') return actor.user
  if (actor.kind === 'cli') return `${actor.user} (CLI)`
  return undefined
}
