/**
 * `epx company add|perimeter|suspend|resume|show|list|history` (and `pin-cert|unpin-cert`,
 * company-pins.ts, `limits`, company-limits.ts): the BSP companies, their certificate binding and their perimeter (DECISIONS.md "Authentication and tenancy").
 * @module
 */
import { companyIdProblem, readCertSubject, readPerimeter } from '../../auth/company-rules.ts'
import { EpxError } from '../../errors.ts'
import { describeShared, openCompanies, perimeterOverlaps, pinsOf, type CompanyRecord } from '../../store/companies.ts'
import { openTokens, tokenState } from '../../store/tokens.ts'
import { openTenure, type TenureChange } from '../../store/tenure.ts'
import type { AuditActor } from '../../store/audit.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import { required } from '../args.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { CliIo, Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { formatTable } from '../table.ts'
import { pinCommands } from './company-pins.ts'
import { describeBudgets, describeQuota, limitsCommand, quotaDayOf } from './company-limits.ts'

const addSpec: CommandSpec = {
  usage: 'epx company add ID --name NAME [--cert-subject DN] [--sites all|PRM...]',
  summary: 'register a company (certificate subject, perimeter)',
  about: [
    'Registers a BSP company. ID: 2 to 63 lowercase letters, digits or "-".',
    'Its client certificate must carry the bound subject (default CN=<ID>,O=<NAME>);',
    '`epx cert issue ID` makes one. Its perimeter is the sites it may read and program:',
    'one BSP per site, so it may not share a site with another active company\'s perimeter',
    '("all" shares every site): narrow the other first (`epx company perimeter`).',
  ].join('\n'),
  positionals: ['ID'],
  options: {
    name: { type: 'string', arg: 'NAME', help: 'display name of the company (required)' },
    'cert-subject': { type: 'string', arg: 'DN', help: 'subject its client certificate must carry, e.g. CN=acme-bsp,O=ACME' },
    sites: { type: 'string', multiple: true, arg: 'all|PRM,...', help: 'perimeter: "all" (default) or PRM ids, comma-separated' },
  },
}

/** Checks an id given on the command line, naming the rule it breaks. */
export function checkCompanyId (id: string, spec: CommandSpec): string {
  const problem = companyIdProblem(id)
  if (problem) throw usageError(spec, problem)
  return id
}

/** `--sites` values → perimeter (auth/company-rules.ts), or EPX_USAGE naming the option. */
function parsePerimeter (values: readonly string[], spec: CommandSpec): CompanyRecord['perimeter'] {
  const read = readPerimeter(values)
  if ('problem' in read) throw usageError(spec, `--sites: ${read.problem}`)
  return read.perimeter
}

function describePerimeter (p: CompanyRecord['perimeter']): string {
  return p === 'all' ? 'all sites' : `${p.length} site(s): ${p.join(', ')}`
}

const add = defineCommand(addSpec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, addSpec)
  const name = required(args, addSpec, 'name').trim()
  if (!name) throw usageError(addSpec, '--name must not be blank')
  const subject = readCertSubject(args.string('cert-subject'), id, name)
  if ('problem' in subject) throw usageError(addSpec, `invalid --cert-subject: ${subject.problem}`)
  const certSubject = subject.subject
  const perimeter = parsePerimeter(args.strings('sites'), addSpec)
  const record: CompanyRecord = { id, name, status: 'active', certSubject, perimeter, createdAt: new Date().toISOString() }
  await withStore(io.dataDir, async store => {
    await openCompanies(store).add(record, { actor: cliActor() })
    await openAudit(store).append({ actor: cliActor(), action: 'company.created', subject: id, outcome: 'ok', details: { certSubject, perimeter } }, Date.now())
  })
  io.out(`added company ${id} (${name})`)
  io.out(`  certificate subject: ${certSubject}`)
  io.out(`  perimeter: ${describePerimeter(perimeter)}`)
  io.out(`next: epx cert issue ${id} --out DIR, then epx token create --company ${id} --scope SCOPE`)
})

const perimeterSpec: CommandSpec = {
  usage: 'epx company perimeter ID --sites all|PRM...',
  summary: 'change the sites a company may read and program',
  about: [
    'Replaces a company\'s perimeter. One BSP per site: an active company\'s perimeter may not share',
    'a site with another active company\'s ("all" shares every site); the refusal names the other.',
    'Narrow a perimeter before giving its sites to another company. A site that leaves it withdraws',
    'the company\'s instructions for it whose day is not over (DECISIONS.md "Tenure").',
  ].join('\n'),
  positionals: ['ID'],
  options: {
    sites: { type: 'string', multiple: true, arg: 'all|PRM,...', help: 'the new perimeter: "all" or PRM ids, comma-separated (required)' },
  },
}

const perimeterCommand = defineCommand(perimeterSpec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, perimeterSpec)
  if (args.strings('sites').length === 0) throw usageError(perimeterSpec, 'missing --sites all|PRM,...')
  const perimeter = parsePerimeter(args.strings('sites'), perimeterSpec)
  await withStore(io.dataDir, async store => {
    await openCompanies(store).update(id, c => ({ ...c, perimeter }), { actor: cliActor() })
    await openAudit(store).append({ actor: cliActor(), action: 'company.rebound', subject: id, outcome: 'ok', details: { perimeter } }, Date.now())
  })
  io.out(`company ${id}: perimeter ${describePerimeter(perimeter)}`)
})

function statusCommand (name: 'suspend' | 'resume', status: CompanyRecord['status']): Command {
  const spec: CommandSpec = {
    usage: `epx company ${name} ID`,
    summary: name === 'suspend' ? 'suspend a company (403 COMPANY_SUSPENDED)' : 'resume a suspended company',
    about: name === 'suspend'
      ? 'Suspends a company: its calls get 403 COMPANY_SUSPENDED from the next request on. Its tokens are kept.'
      : 'Resumes a suspended company: its valid tokens work again from the next request on. Refused while its perimeter shares a site with another active company\'s (one BSP per site).',
    positionals: ['ID'],
  }
  return defineCommand(spec, async (args, io) => {
    const id = checkCompanyId(args.positionals[0]!, spec)
    const before = await withStore(io.dataDir, async store => {
      let previous: CompanyRecord['status'] | undefined
      await openCompanies(store).update(id, c => { previous = c.status; return { ...c, status } }, { actor: cliActor() })
      const outcome = previous === status ? `already ${status}` : 'ok'
      await openAudit(store).append({ actor: cliActor(), action: name === 'suspend' ? 'company.suspended' : 'company.resumed', subject: id, outcome }, Date.now())
      return previous
    })
    io.out(before === status ? `company ${id} was already ${status}` : `company ${id} is now ${status}`)
  })
}

const showSpec: CommandSpec = {
  usage: 'epx company show ID [--json]',
  summary: 'show one company',
  about: 'Shows a company: name, status, certificate binding, perimeter, request budgets, storage quota with today\'s use, and a count of its tokens.',
  positionals: ['ID'],
  options: { json: { type: 'boolean', help: 'print the record as JSON' } },
}

const show = defineCommand(showSpec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, showSpec)
  const { company, tokens, day } = await withStore(io.dataDir, (store, settings) => {
    const company = openCompanies(store).get(id)
    return { company, tokens: openTokens(store).list(id), day: company && quotaDayOf(store, settings, company) }
  })
  if (!company || !day) throw new EpxError('EPX_NOT_FOUND', [`no company '${id}' (see 'epx company list')`])
  if (args.flag('json')) {
    const quotaToday = { date: day.date, bytes: day.used.bytes, programmes: day.used.programmes, limit: day.limit, resetsAt: new Date(day.resetsAtMs).toISOString() }
    io.out(JSON.stringify({ ...asShown(company), quotaToday }, null, 2))
    return
  }
  const now = Date.now()
  const live = tokens.filter(t => tokenState(t, now) === 'active').length
  for (const line of formatTable([
    ['id:', company.id],
    ['name:', company.name],
    ['status:', company.status],
    ['certificate subject:', company.certSubject],
    ...pinRows(company),
    ['perimeter:', describePerimeter(company.perimeter)],
    ['request budgets:', describeBudgets(company)],
    ['storage quota:', describeQuota(day)],
    ['created:', company.createdAt],
    ['tokens:', `${live} usable, ${tokens.length - live} revoked or expired`],
  ])) io.out(line)
})

const historySpec: CommandSpec = {
  usage: 'epx company history ID [--json]',
  summary: 'show every change of a company\'s perimeter and status',
  about: [
    'Shows a company\'s perimeter history, oldest first: each change (added, perimeter, suspended,',
    'resumed) with its instant, who made it, and the status and perimeter it left. A company stored',
    'before the history existed starts with its record as it stands ("recorded", at its creation).',
  ].join('\n'),
  positionals: ['ID'],
  options: { json: { type: 'boolean', help: 'print a JSON array' } },
}

const history = defineCommand(historySpec, async (args, io) => {
  const id = checkCompanyId(args.positionals[0]!, historySpec)
  const changes = await withStore(io.dataDir, store => openTenure(store).historyOf(id))
  if (changes.length === 0) throw new EpxError('EPX_NOT_FOUND', [`no company '${id}' (see 'epx company list')`])
  if (args.flag('json')) {
    io.out(JSON.stringify(changes.map(({ seq: _, atMs: __, ...c }) => c), null, 2))
    return
  }
  const rows = changes.map((c: TenureChange) => [c.at, c.kind, c.status, describePerimeter(c.perimeter), describeActor(c.actor)])
  for (const line of formatTable([['AT', 'CHANGE', 'STATUS', 'PERIMETER', 'BY'], ...rows])) io.out(line)
})

function describeActor (a: AuditActor): string {
  switch (a.kind) {
    case 'cli': return `cli (${a.user})`
    case 'console': return `console (${a.user})`
    case 'company': return `company ${a.companyId}`
    default: return a.kind === 'host' ? 'epx' : a.kind
  }
}

const listSpec: CommandSpec = {
  usage: 'epx company list [--json]',
  summary: 'list the companies',
  about: 'Lists every company with its status, perimeter and certificate subject.',
  options: { json: { type: 'boolean', help: 'print a JSON array' } },
}

const list = defineCommand(listSpec, async (args, io) => {
  const companies = await withStore(io.dataDir, store => openCompanies(store).list())
  printCompanies(companies, args.flag('json'), io)
})

function printCompanies (companies: readonly CompanyRecord[], json: boolean, io: CliIo): void {
  if (json) {
    io.out(JSON.stringify(companies.map(asShown), null, 2))
    reportOverlaps(companies, io)
    return
  }
  if (companies.length === 0) {
    io.out("no companies yet; add one with 'epx company add ID --name NAME'")
    return
  }
  const rows = companies.map(c => [
    c.id, c.name, c.status, c.perimeter === 'all' ? 'all' : `${c.perimeter.length} site(s)`, c.certSubject, String(pinsOf(c).length),
  ])
  for (const line of formatTable([['ID', 'NAME', 'STATUS', 'PERIMETER', 'CERTIFICATE SUBJECT', 'PINS'], ...rows])) io.out(line)
  reportOverlaps(companies, io)
}

/** Overlaps stored before one BSP per site was the rule: each said once, with what to do. */
function reportOverlaps (companies: readonly CompanyRecord[], io: CliIo): void {
  for (const o of perimeterOverlaps(companies)) {
    io.err(`epx: warning: active companies ${o.a.id} and ${o.b.id} share ${describeShared(o)}: the last programme either sends takes ` +
      `the site from the other's, whatever their emitted_at; narrow one perimeter (epx company perimeter ID --sites PRM,...) or suspend one`)
  }
}

/** The record as `--json` prints it: its pins always under `certPins`, `[]` when none. */
function asShown (c: CompanyRecord): CompanyRecord {
  return { ...c, certPins: pinsOf(c) }
}

/** One row per pinned fingerprint (a fingerprint is 95 characters: one per line reads best). */
function pinRows (c: CompanyRecord): string[][] {
  const pins = pinsOf(c)
  if (pins.length === 0) return [['pinned certificates:', '(none: the certificate subject alone decides)']]
  return pins.map((p, i) => [i === 0 ? 'pinned certificates:' : '', p])
}

export const companySubcommands: readonly Command[] = [
  add, perimeterCommand, statusCommand('suspend', 'suspended'), statusCommand('resume', 'active'), show, list, history, ...pinCommands, limitsCommand,
]
