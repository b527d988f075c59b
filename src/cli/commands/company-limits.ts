/**
 * `epx company limits ID [--get RATE/BURST|default] [--post RATE/BURST|default]
 * [--quota-bytes N|default]`: a company's own request budgets and storage quota, in place
 * of the configuration's `api.rateLimit` and `inbound.maxBytesPerCompanyPerDay`
 * (DECISIONS.md "Rate limits and quotas"). An update of the record, so the door applies
 * it from the company's next request.
 * @module
 */
import { openCompanies, type CompanyRecord, type RequestBudget } from '../../store/companies.ts'
import { bytesText, storageQuota, type QuotaDay } from '../../apply/quota.ts'
import type { Store } from '../../store/open-store.ts'
import type { Settings } from '../settings.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import { EpxError } from '../../errors.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import { withStore } from '../settings.ts'
import { checkCompanyId } from './companies.ts'

const spec: CommandSpec = {
  usage: 'epx company limits ID [--get RATE/BURST|default] [--post RATE/BURST|default] [--quota-bytes N|default]',
  summary: 'show or set a company\'s request budgets and storage quota (429 RATE_LIMITED, QUOTA_EXCEEDED over them)',
  about: [
    'A company\'s request budgets: a token bucket for its GET and HEAD requests, one for its POSTs.',
    'RATE is the requests a second it may make sustained, BURST how many at once after a quiet',
    'spell (e.g. --get 100/1000). "default" goes back to the configuration\'s (api.rateLimit).',
    'Without an option: shows them. Applied from the company\'s next request, a full bucket of the new',
    'size; each door thread and each instance counts on its own.',
    'N is the bytes of programmes it may have accepted in a Paris day (e.g. 268435456, or 256MiB; KiB,',
    'MiB and GiB are understood); "default" goes back to inbound.maxBytesPerCompanyPerDay. The day\'s',
    'count is in the store: every instance sharing it counts the same bytes.',
  ].join('\n'),
  positionals: ['ID'],
  options: {
    get: { type: 'string', arg: 'RATE/BURST|default', help: 'budget of its GET and HEAD requests' },
    post: { type: 'string', arg: 'RATE/BURST|default', help: 'budget of its POST requests' },
    'quota-bytes': { type: 'string', arg: 'N|default', help: 'bytes of programmes it may have accepted a Paris day' },
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

/** The configuration's bound of a quota (1 PiB). */
const MAX_QUOTA = 2 ** 50
const UNITS: Readonly<Record<string, number>> = { '': 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30 }

/** `N`, `NKiB`, `NMiB`, `NGiB` → bytes, `default` → undefined (the configuration's); EPX_USAGE otherwise. */
function readQuota (text: string): number | undefined {
  if (text === 'default') return undefined
  const m = /^(\d{1,16})(KiB|MiB|GiB)?$/.exec(text)
  const bytes = m ? Number(m[1]) * UNITS[m[2] ?? '']! : NaN
  if (!(bytes >= 1 && bytes <= MAX_QUOTA)) {
    throw usageError(spec, `--quota-bytes ${text}: expected a whole number of bytes from 1 to ${MAX_QUOTA} (1 PiB), optionally followed by KiB, MiB or GiB (e.g. 256MiB), or "default"`)
  }
  return bytes
}

/** A company's quota and its use of the day in words, as `limits` and `show` print them. */
export function describeQuota (d: QuotaDay): string {
  const whose = d.own ? 'its own' : 'the configuration\'s (inbound.maxBytesPerCompanyPerDay)'
  return `${bytesText(d.used.bytes)} of ${bytesText(d.limit)} used on ${d.date} (Europe/Paris; ${d.used.programmes} programme(s) accepted; ${whose}); resets at 00:00 Paris time (${new Date(d.resetsAtMs).toISOString()})`
}

/** The company's quota of today, read in a command's store. */
export function quotaDayOf (store: Store, settings: Settings, c: CompanyRecord): QuotaDay {
  return storageQuota(store, settings.config.inbound.maxBytesPerCompanyPerDay).dayOf(c, new Date())
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
  const quotaText = args.string('quota-bytes')
  const quota = quotaText === undefined ? undefined : { bytes: readQuota(quotaText) }
  const shown = await withStore(io.dataDir, async (store, settings) => {
    const companies = openCompanies(store)
    let company = companies.get(id)
    if (company && (Object.keys(changes).length > 0 || quota)) {
      company = await companies.update(id, c => withQuota(withLimits(c, changes), quota), { actor: cliActor() })
      await openAudit(store).append({
        actor: cliActor(), action: 'company.limits', subject: id, outcome: 'ok',
        details: { rateLimit: company.rateLimit ?? 'default', quotaBytesPerDay: company.quotaBytesPerDay ?? 'default' },
      }, Date.now())
    }
    return company && { company, day: quotaDayOf(store, settings, company) }
  })
  if (!shown) throw new EpxError('EPX_NOT_FOUND', [`no company '${id}' (see 'epx company list')`])
  io.out(`company ${id}: ${describeBudgets(shown.company)}`)
  io.out(`storage quota: ${describeQuota(shown.day)}`)
})

/** The record with its own quota set (`bytes` undefined: back to the configuration's), or as it was. */
function withQuota (c: CompanyRecord, quota: { bytes: number | undefined } | undefined): CompanyRecord {
  if (!quota) return c
  const { quotaBytesPerDay: _, ...rest } = c
  return quota.bytes === undefined ? rest : { ...rest, quotaBytesPerDay: quota.bytes }
}

/** The record with `changes` applied (undefined: back to the configuration's); no `rateLimit` key when none is its own. */
function withLimits (c: CompanyRecord, changes: Partial<Record<'get' | 'post', RequestBudget | undefined>>): CompanyRecord {
  const { rateLimit: before, ...rest } = c
  const limits = { ...before, ...changes }
  const own = Object.fromEntries(Object.entries(limits).filter(([, b]) => b !== undefined))
  return Object.keys(own).length ? { ...rest, rateLimit: own } : rest
}
