/**
 * `epx token create|list|revoke`: Bearer tokens (DECISIONS.md "Authentication and
 * tenancy"). The secret is printed once, alone on the last line of stdout, and only
 * its SHA-256 hash is stored; `list` never shows either.
 * @module
 */
import { createToken } from '../../auth/issue-token.ts'
import { parseDuration } from '../../auth/tokens.ts'
import { SCOPES, isScope, type Scope } from '../../contract/scopes.ts'
import { EpxError } from '../../errors.ts'
import { openCompanies } from '../../store/companies.ts'
import { openTokens, tokenState } from '../../store/tokens.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import { required } from '../args.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { printList } from '../table.ts'
import { checkCompanyId } from './companies.ts'

const createSpec: CommandSpec = {
  usage: 'epx token create --company ID --scope SCOPE [--scope SCOPE] [--expires-in DURATION] [--json]',
  summary: 'create a token; prints the secret once, on the last line',
  about: [
    `Creates a Bearer token for a company. Scopes: ${SCOPES.join(', ')}.`,
    'DURATION is a number and a unit: s, m, h or d (90d, 12h). Without it the token never',
    'expires; revoke it with `epx token revoke`. The secret is shown once, alone on the',
    'last line of the output: store it now, it cannot be recovered.',
  ].join('\n'),
  options: {
    company: { type: 'string', arg: 'ID', help: 'company the token belongs to (required)' },
    scope: { type: 'string', multiple: true, arg: 'SCOPE', help: `${SCOPES.join(' or ')} (at least one)` },
    'expires-in': { type: 'string', arg: 'DURATION', help: 'lifetime, e.g. 30d, 12h, 15m, 90s (default: no expiry)' },
    json: { type: 'boolean', help: 'print { id, company, scopes, expiresAt, token } as JSON' },
  },
}

const create = defineCommand(createSpec, async (args, io) => {
  const companyId = checkCompanyId(required(args, createSpec, 'company'), createSpec)
  const scopes = args.strings('scope').flatMap(s => s.split(',')).map(s => s.trim()).filter(Boolean)
  if (scopes.length === 0) throw usageError(createSpec, `missing --scope SCOPE; one of: ${SCOPES.join(', ')}`)
  const bad = scopes.filter(s => !isScope(s))
  if (bad.length) throw usageError(createSpec, `unknown scope ${bad.map(s => `'${s}'`).join(', ')}; the scopes are: ${SCOPES.join(', ')}`)
  const expiresIn = args.string('expires-in')
  const ttlMs = expiresIn === undefined ? undefined : parseDuration(expiresIn)
  if (expiresIn !== undefined && ttlMs === undefined) {
    throw usageError(createSpec, `invalid --expires-in '${expiresIn}': use a whole number and a unit s, m, h or d, e.g. 90d`)
  }
  const { record, token } = await withStore(io.dataDir, async store => {
    const company = openCompanies(store).get(companyId)
    if (company?.status === 'suspended') io.err(`epx: warning: company ${companyId} is suspended; the token answers 403 until 'epx company resume ${companyId}'`)
    return createToken(store, cliActor(), companyId, scopes as Scope[], ttlMs)
  })
  if (args.flag('json')) {
    io.out(JSON.stringify({ id: record.id, company: record.companyId, scopes: record.scopes, expiresAt: record.expiresAt ?? null, token }, null, 2))
    return
  }
  io.out(`created token ${record.id} for company ${record.companyId}`)
  io.out(`  scopes: ${record.scopes.join(', ')}`)
  io.out(`  expires: ${record.expiresAt ?? 'never'}`)
  io.out('the secret follows, shown this once; store it now:')
  io.out(token)
})

const listSpec: CommandSpec = {
  usage: 'epx token list [--company ID] [--json]',
  summary: 'list tokens (never the secret)',
  about: 'Lists tokens (id, company, scopes, state, dates). Never the secret nor its hash.',
  options: {
    company: { type: 'string', arg: 'ID', help: 'only the tokens of this company' },
    json: { type: 'boolean', help: 'print a JSON array' },
  },
}

const list = defineCommand(listSpec, async (args, io) => {
  const companyId = args.string('company')
  if (companyId !== undefined) checkCompanyId(companyId, listSpec)
  const tokens = await withStore(io.dataDir, store => {
    if (companyId !== undefined && !openCompanies(store).get(companyId)) {
      throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}' (see 'epx company list')`])
    }
    return openTokens(store).list(companyId)
  })
  const now = Date.now()
  // Explicit fields: the hash never leaves the store, not even in JSON.
  const shown = tokens.map(t => ({
    id: t.id, company: t.companyId, scopes: t.scopes, state: tokenState(t, now),
    createdAt: t.createdAt, expiresAt: t.expiresAt ?? null, revokedAt: t.revokedAt ?? null, lastUsedAt: t.lastUsedAt ?? null,
  }))
  printList(io.out, args.flag('json'), shown, {
    empty: companyId ? `no tokens for company ${companyId}` : 'no tokens yet',
    header: ['ID', 'COMPANY', 'SCOPES', 'STATE', 'CREATED', 'EXPIRES', 'LAST USED'],
    row: t => [t.id, t.company, t.scopes.join(','), t.state, t.createdAt, t.expiresAt ?? 'never', t.lastUsedAt ?? '-'],
  })
})

const revokeSpec: CommandSpec = {
  usage: 'epx token revoke TOKEN_ID',
  summary: 'revoke a token by id',
  about: "Revokes a token by its public id (tok_..., see 'epx token list'): it answers 401 from the next request on.",
  positionals: ['TOKEN_ID'],
}

const revoke = defineCommand(revokeSpec, async (args, io) => {
  const id = args.positionals[0]!
  if (id.startsWith('epx_')) {
    // Never echo what looks like a secret back (DECISIONS.md: secrets never in output).
    throw usageError(revokeSpec, "that is a token secret, not its id; revoke by id (tok_..., see 'epx token list')")
  }
  const record = await withStore(io.dataDir, async store => {
    if (!openTokens(store).get(id)) throw new EpxError('EPX_NOT_FOUND', [`no token '${id}' (see 'epx token list')`])
    const revoked = await openTokens(store).revoke(id, new Date().toISOString())
    await openAudit(store).append({ actor: cliActor(), action: 'token.revoked', subject: id, outcome: 'ok', details: { companyId: revoked.companyId } }, Date.now())
    return revoked
  })
  io.out(`token ${record.id} of company ${record.companyId} is revoked (since ${record.revokedAt})`)
})

export const tokenSubcommands: readonly Command[] = [create, list, revoke]
