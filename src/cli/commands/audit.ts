/**
 * `epx audit list`: the audit trail (`store/audit.ts`), filtered by time, company and
 * action: who sent which programme, who changed which token or company, which
 * publication ran, in time order.
 * @module
 */
import { parseDuration } from '../../auth/tokens.ts'
import { readUtcInstant } from '../../contract/instants.ts'
import { isCalendarDate, parisDayMs } from '../../contract/paris-day.ts'
import { auditDetailsText, openAudit, type AuditActor } from '../../store/audit.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { printList } from '../table.ts'
import { checkCompanyId } from './companies.ts'

const WHEN = 'an instant (2026-11-21T12:29:00Z), a Paris day (2026-11-21) or a duration ago (24h, 7d)'

const listSpec: CommandSpec = {
  usage: 'epx audit list [--since WHEN] [--until WHEN] [--company ID] [--action ACTION] [--json]',
  summary: 'list audit records: programmes, publications, token and company changes',
  about: [
    'Lists the audit trail in time order: programmes accepted and rejected, publication runs,',
    'tokens created, revoked or used dead, companies created, suspended, resumed or rebound.',
    `WHEN is ${WHEN}. A day given to --until includes the whole day.`,
    'ACTION is an action (programme.accepted) or a prefix ending in "." (token.).',
  ].join('\n'),
  options: {
    since: { type: 'string', arg: 'WHEN', help: 'records at or after WHEN' },
    until: { type: 'string', arg: 'WHEN', help: 'records at or before WHEN' },
    company: { type: 'string', arg: 'ID', help: 'records of this company (as actor or subject)' },
    action: { type: 'string', arg: 'ACTION', help: 'programme.accepted, programme.rejected, publication.run, token., company., ...' },
    json: { type: 'boolean', help: 'print a JSON array of { at, actor, action, subject, outcome, details }' },
  },
}

/** WHEN → milliseconds; a day is its Paris start, or its end for `--until`. */
function instantOf (text: string, name: 'since' | 'until', nowMs: number): number {
  if (isCalendarDate(text)) {
    const day = parisDayMs(text)
    return name === 'since' ? day.startMs : day.endMs - 1
  }
  const ago = parseDuration(text)
  if (ago !== undefined) return nowMs - ago
  const at = readUtcInstant(text)
  if (typeof at !== 'string') return at.ms
  throw usageError(listSpec, `--${name} ${text} is not ${WHEN}`)
}

export function describeActor (a: AuditActor): string {
  switch (a.kind) {
    case 'company': return `company ${a.companyId}${a.tokenId ? ` (${a.tokenId})` : ''}`
    case 'cli': return `cli ${a.user}`
    case 'console': return `console ${a.user}`
    default: return a.kind
  }
}

const list = defineCommand(listSpec, async (args, io) => {
  const now = Date.now()
  const since = args.string('since')
  const until = args.string('until')
  const companyId = args.string('company')
  if (companyId !== undefined) checkCompanyId(companyId, listSpec)
  const query = {
    ...(since === undefined ? {} : { sinceMs: instantOf(since, 'since', now) }),
    ...(until === undefined ? {} : { untilMs: instantOf(until, 'until', now) }),
    ...(companyId === undefined ? {} : { companyId }),
    ...(args.string('action') === undefined ? {} : { action: args.string('action')! }),
  }
  const records = await withStore(io.dataDir, (store, settings) => openAudit(store, settings.config.audit).list(query))
  printList(io.out, args.flag('json'), records, {
    empty: 'no audit records match',
    header: ['AT', 'ACTOR', 'ACTION', 'SUBJECT', 'OUTCOME', 'DETAILS'],
    row: r => [r.at, describeActor(r.actor), r.action, r.subject, r.outcome, auditDetailsText(r)],
  })
})

export const auditSubcommands: readonly Command[] = [list]
