/**
 * `epx publish` and `epx revisions list`: ask for a Besoins_Agreges publication from
 * the command line (DECISIONS.md "Besoins_Agreges publication": solver, CLI or
 * console), and show the kept revisions of a pair. LMDB is multi-process, so both
 * work while `epx start` runs; the running API serves the new revision at once.
 * @module
 */
import type { Logger, PublishReport } from '../../host/contract.ts'
import { createReferenceHost, systemClock } from '../../host/reference-host.ts'
import { openRevisions } from '../../store/revisions.ts'
import { openPublication } from '../../publish/open-publication.ts'
import { publicationRun } from '../../apply/audit-events.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import { calendarDate, required, siteId, siteIds } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import type { CliIo, Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { formatTable, printList } from '../table.ts'

const publishSpec: CommandSpec = {
  usage: 'epx publish --date YYYY-MM-DD [--site PRM]... [--json]',
  about: [
    'Publishes a new Besoins_Agreges revision for a Paris day, for every site the solver',
    'manages or only the given ones, from the needs of the configured reference host.',
    'Sites that fail are retried, then reported; the exit code is 1 when any failed.',
  ].join('\n'),
  options: {
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'target date, a Europe/Paris day (required)' },
    site: { type: 'string', multiple: true, arg: 'PRM', help: 'publish only this site (default: every site)' },
    json: { type: 'boolean', help: 'print the report { targetDate, published[], failed[] } as JSON' },
  },
}

const listSpec: CommandSpec = {
  usage: 'epx revisions list --site PRM --date YYYY-MM-DD [--json]',
  summary: 'list the kept revisions of a site and day',
  about: 'Lists the kept revisions of a site and day, oldest first; the last one is what GET serves.',
  options: {
    site: { type: 'string', arg: 'PRM', help: 'site id, PRM followed by 14 digits (required)' },
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'target date (required)' },
    json: { type: 'boolean', help: 'print a JSON array of { siteId, targetDate, emittedAt, etag, lastModified, size, latest }' },
  },
}

/** Progress the publisher logs (retries, failures) goes to stderr; the rest stays quiet. */
function cliLogger (io: CliIo): Logger {
  const log: Logger = {
    debug () {},
    info () {},
    warn: (obj, msg) => io.err(`epx: ${msg ?? ''} ${JSON.stringify(obj)}`.trimEnd()),
    error: () => {},   // failed sites are printed from the report
    child: () => log,
  }
  return log
}

export const publishCommand = defineCommand(publishSpec, async (args, io) => {
  const targetDate = calendarDate(required(args, publishSpec, 'date'), publishSpec)
  const sites = siteIds(args, publishSpec)
  const report: PublishReport = await withStore(io.dataDir, async (store, settings) => {
    const ref = createReferenceHost({ dataDir: io.dataDir, sites: settings.host.sites, cycleSeconds: 0 })
    let audited: Promise<void> | undefined
    try {
      const publication = openPublication(store, settings.config.publish, {
        solver: ref.host.solver, clock: systemClock, log: cliLogger(io),
        onRun: (done, _request, ms) => { audited = openAudit(store).append(publicationRun(done, cliActor(), ms), Date.now()) },
      })
      try {
        const done = await publication.publisher.publish({ targetDate, siteIds: sites.length ? sites : undefined, trigger: 'cli' })
        await audited   // on disk before the command returns
        return done
      } finally {
        await publication.close()
      }
    } finally {
      await ref.close()
    }
  })
  if (args.flag('json')) {
    io.out(JSON.stringify(report, null, 2))
  } else {
    if (report.published.length) {
      for (const line of formatTable([['SITE_ID', 'EMITTED_AT', 'ETAG'], ...report.published.map(p => [p.siteId, p.emittedAt, p.etag])])) io.out(line)
    }
    io.out(`published ${report.published.length} site(s) for ${targetDate}; ${report.failed.length} failed`)
  }
  for (const f of report.failed) io.err(`epx: site ${f.siteId} not published for ${targetDate}: ${f.reason}`)
  return report.failed.length ? 1 : 0
})

const list = defineCommand(listSpec, async (args, io) => {
  const site = siteId(required(args, listSpec, 'site'), listSpec)
  const targetDate = calendarDate(required(args, listSpec, 'date'), listSpec)
  const rows = await withStore(io.dataDir, (store, settings) => {
    const revisions = openRevisions(store, { retentionDays: settings.config.publish.retentionDays })
    const latest = revisions.latest(site, targetDate)
    return revisions.list(site, targetDate).map(r => ({
      siteId: r.siteId, targetDate: r.targetDate, emittedAt: r.emittedAt, etag: r.etag,
      lastModified: r.lastModified, size: r.size, latest: r.emittedAtMs === latest?.emittedAtMs,
    }))
  })
  printList(io.out, args.flag('json'), rows, {
    empty: `no revision of ${site} for ${targetDate}`,
    header: ['EMITTED_AT', 'ETAG', 'LAST_MODIFIED', 'BYTES', 'LATEST'],
    row: r => [r.emittedAt, r.etag, r.lastModified, String(r.size), r.latest ? 'yes' : ''],
  })
})

export const revisionsSubcommands: readonly Command[] = [list]
