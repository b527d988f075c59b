/**
 * `epx deliveries --date D`: per company, how many of the sites published for day D
 * (within its perimeter) it fetched at their latest revision, how many it holds an
 * older revision of (stale), and how many it never fetched. From the delivery receipts
 * (`store/deliveries.ts`); the running service writes them every few seconds.
 * @module
 */
import { deliveryRows } from '../../apply/delivery-status.ts'
import { formatUtcInstant } from '../../contract/instants.ts'
import { EpxError } from '../../errors.ts'
import { openCompanies, type CompanyRecord } from '../../store/companies.ts'
import { openDeliveries, type DeliveryReceipt } from '../../store/deliveries.ts'
import { openRevisions, type RevisionMeta } from '../../store/revisions.ts'
import { calendarDate, required } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import { withStore } from '../settings.ts'
import { formatTable } from '../table.ts'
import { checkCompanyId } from './companies.ts'

const spec: CommandSpec = {
  usage: 'epx deliveries --date YYYY-MM-DD [--company ID] [--json]',
  about: [
    'Per company: of the sites published for that Paris day within its perimeter, how many it',
    'fetched (GET 200) or confirmed (304) at their latest revision, how many it holds an older',
    'revision of (stale), and how many it never fetched. The running service records fetches',
    'in memory and writes them every 5 seconds. --json lists the sites of each group.',
  ].join('\n'),
  options: {
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'the target date (required)' },
    company: { type: 'string', arg: 'ID', help: 'only this company' },
    json: { type: 'boolean', help: 'print a JSON array, one object per company, with the sites of each group' },
  },
}

interface CompanyDeliveries {
  readonly company: string
  readonly published: number
  readonly latest: Array<{ siteId: string; at: string; status: number }>
  readonly stale: Array<{ siteId: string; at: string; status: number; heldEmittedAt: string; latestEmittedAt: string }>
  readonly never: string[]
}

/** One company's view of a day: each published site in its perimeter falls in one group. */
export function deliveriesOf (company: CompanyRecord, published: readonly RevisionMeta[], receipts: readonly DeliveryReceipt[]): CompanyDeliveries {
  const rows = deliveryRows(company, published, receipts)
  const out: CompanyDeliveries = { company: company.id, published: rows.length, latest: [], stale: [], never: [] }
  for (const { siteId, state, latest, receipt: r } of rows) {
    if (!r) { out.never.push(siteId); continue }
    const at = formatUtcInstant(r.atMs)
    if (state === 'latest') out.latest.push({ siteId, at, status: r.status })
    else out.stale.push({ siteId, at, status: r.status, heldEmittedAt: formatUtcInstant(r.emittedAtMs), latestEmittedAt: latest.emittedAt })
  }
  return out
}

export const deliveriesCommand = defineCommand(spec, async (args, io) => {
  const targetDate = calendarDate(required(args, spec, 'date'), spec)
  const companyId = args.string('company')
  if (companyId !== undefined) checkCompanyId(companyId, spec)
  const rows = await withStore(io.dataDir, (store, settings) => {
    const companies = companyId === undefined ? openCompanies(store).list() : [openCompanies(store).get(companyId)]
    if (companies[0] === undefined && companyId !== undefined) throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}' (see 'epx company list')`])
    const revisions = openRevisions(store, { retentionDays: settings.config.publish.retentionDays })
    try {
      const published = revisions.latestOfDay(targetDate)
      const receipts = openDeliveries(store).list(targetDate, companyId)
      return (companies as CompanyRecord[]).map(c => deliveriesOf(c, published, receipts))
    } finally {
      revisions.close()
    }
  })
  if (args.flag('json')) {
    io.out(JSON.stringify(rows.map(r => ({ targetDate, ...r })), null, 2))
    return
  }
  if (rows.length === 0) {
    io.out("no companies yet; add one with 'epx company add ID --name NAME'")
    return
  }
  const table = rows.map(r => [r.company, String(r.published), String(r.latest.length), String(r.stale.length), String(r.never.length)])
  io.out(`Besoins_Agreges of ${targetDate}: sites published in each company's perimeter, and what it fetched`)
  for (const line of formatTable([['COMPANY', 'PUBLISHED', 'LATEST', 'STALE', 'NEVER'], ...table])) io.out(line)
})
