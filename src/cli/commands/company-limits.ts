/**
 * `epx company limits ID [--get RATE/BURST|default] [--post RATE/BURST|default]`: a
 * company's own request budgets, in place of the configuration's `api.rateLimit`
 * (DECISIONS.md "Rate limits and quotas"). An update of the record, so the door applies
 * it from the company's next request.
 * @module
 */
import { openCompanies, type CompanyRecord, type RequestBudget } from '../../store/companies.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import { EpxError } from '../../errors.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import { withStore } from '../settings.ts'
import { checkCompanyId } from './companies.ts'

const spec: CommandSpec = {
  usage: 'epx company limits ID [--get RATE/BURST|default] [--post RATE/BURST|default]',
  summary: 'show or set a company\'s request budgets (429 RATE_LIMITED over them)',
  about: [
    'A company\'s request budgets: a token bucket for its GET and HEAD requests, one for its POSTs.',
    'RATE is the requests a second it may make sustained, BURST how many at once after a quiet',
    'spell (e.g. --get 100/1000). "default" goes back to the configuration\'s (api.rateLimit).',
    'Without an option: shows them. Applied from the company\'s next request, a full bucket of the new',
    'size; each door thread and each instance counts on its own.',
  ].join('\n'),
  positionals: ['ID'],
  options: {
    get: { type: 'string', arg: 'RATE/BURST|default', help: 'budget of its GET and HEAD requests' },
    post: { type: 'string', arg: 'RATE/BURST|default', help: 'budget of its POST requests' },
  },
}

/** Most requests a second or at once a budget may say (the configuration's bound). */
const MAX = 1_000_000

/** `RATE/BURST` → a budget, `default` → undefined (the configuration's); EPX_USAGE naming the option otherwise. */
function readBudget (option: 'get' | 'post', text: string): RequestBudget | undefined {
  if (text === 'default') return undefined
  const m = /^(\d+(?:\.\d+)?)\/(\d+)$/.exec(text)
  const perSecond = m ? Number(m[1]) : NaN
  const burst = m ? Number(m[2]) : NaN
  if (!(perSecond > 0 && perSecond <= MAX && burst >= 1 && burst <= MAX)) {
    throw usageError(spec, `--${option} ${text}: expected RATE/BURST (RATE above 0 requests a second, BURST a whole number from 1, both at most ${MAX}), or "default"`)
  }
  return { perSecond, burst }
}

function describe (budget: RequestBudget | undefined): string {
  return budget ? `${budget.perSecond}/s, bursts of ${budget.burst}` : 'the configuration\'s (api.rateLimit)'
}

/** A company's budgets in words, as `limits` and `show` print them. */
export function describeBudgets (c: CompanyRecord): string {
  return `GET and HEAD ${describe(c.rateLimit?.get)}; POST ${describe(c.rateLimit?.post)}`
}

export const limitsCommand = defineCommand(spec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, spec)
  const given = { get: args.string('get'), post: args.string('post') }
  const changes: Partial<Record<'get' | 'post', RequestBudget | undefined>> = {}
  for (const kind of ['get', 'post'] as const) if (given[kind] !== undefined) changes[kind] = readBudget(kind, given[kind])
  const company = await withStore(io.dataDir, async store => {
    const companies = openCompanies(store)
    if (Object.keys(changes).length === 0) return companies.get(id)
    const after = await companies.update(id, c => withLimits(c, changes), { actor: cliActor() })
    await openAudit(store).append({ actor: cliActor(), action: 'company.limits', subject: id, outcome: 'ok', details: { rateLimit: after.rateLimit ?? 'default' } }, Date.now())
    return after
  })
  if (!company) throw new EpxError('EPX_NOT_FOUND', [`no company '${id}' (see 'epx company list')`])
  io.out(`company ${id}: ${describeBudgets(company)}`)
})

/** The record with `changes` applied (undefined: back to the configuration's); no `rateLimit` key when none is its own. */
function withLimits (c: CompanyRecord, changes: Partial<Record<'get' | 'post', RequestBudget | undefined>>): CompanyRecord {
  const { rateLimit: before, ...rest } = c
  const limits = { ...before, ...changes }
  const own = Object.fromEntries(Object.entries(limits).filter(([, b]) => b !== undefined))
  return Object.keys(own).length ? { ...rest, rateLimit: own } : rest
}
