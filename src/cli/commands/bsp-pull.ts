/**
 * `epx bsp pull`: fetch the Besoins_Agreges of some sites for a day into a folder, by
 * the book (src/bsp/pull.ts); `--watch` keeps polling as the contract asks (watch.ts).
 * @module
 */
import { resolve } from 'node:path'
import { pullRound, type RoundReport } from '../../bsp/pull.ts'
import { realTiming } from '../../bsp/timing.ts'
import { DEFAULT_INTERVAL_SECS, watch } from '../../bsp/watch.ts'
import { calendarDate, required, siteIds } from '../args.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { CliIo } from '../io.ts'
import { connect, connectionOptions } from './bsp.ts'

const spec: CommandSpec = {
  usage: 'epx bsp pull --url URL --cert FILE --key FILE [--ca FILE] [--token-file FILE] --site PRM... --date YYYY-MM-DD --out DIR [--watch]',
  dataDir: false,
  summary: 'fetch Besoins_Agreges into a folder (ETag kept, 304 when unchanged); --watch polls',
  about: [
    'Fetches the latest Besoins_Agreges of each site for a day into DIR/<date>/<site>.json, as a BSP',
    'should: the last ETag and Last-Modified of each site are kept in DIR and sent back (304: nothing',
    'new), a file is written only on 200 and after it passed the schema, 503 and network errors are',
    'retried with backoff, a 404 is reported as missing (retry in 5 minutes at the earliest).',
    'With --watch: first round at about 08:30 Paris the day before the target day, then a round every',
    '--interval seconds until the target day is over (or --rounds). Exit code 1 when a site failed.',
  ].join('\n'),
  options: {
    ...connectionOptions,
    site: { type: 'string', multiple: true, arg: 'PRM', help: 'a site id, PRM followed by 14 digits (comma lists allowed; required)' },
    date: { type: 'string', arg: 'YYYY-MM-DD', help: 'the target day, Europe/Paris (required)' },
    out: { type: 'string', arg: 'DIR', help: 'the folder for documents and their validators (required)' },
    watch: { type: 'boolean', help: 'keep polling (see above)' },
    interval: { type: 'string', arg: 'SECONDS', help: `between two rounds of --watch (default ${DEFAULT_INTERVAL_SECS}, at least 60)` },
    rounds: { type: 'string', arg: 'N', help: 'stop --watch after N rounds' },
    json: { type: 'boolean', help: 'print each round\'s report as JSON' },
  },
}

export const pullCommand = defineCommand(spec, async (args, io) => {
  const sites = siteIds(args, spec)
  if (sites.length === 0) throw usageError(spec, 'missing --site PRM')
  const targetDate = calendarDate(required(args, spec, 'date'), spec)
  const dir = resolve(required(args, spec, 'out'))
  const intervalSecs = count(args.string('interval'), 'interval')
  const rounds = count(args.string('rounds'), 'rounds')
  const client = connect(args, spec)
  const print = (r: RoundReport) => printRound(r, io, args.flag('json'))
  try {
    const base = { client, sites, targetDate, dir, timing: realTiming }
    const reports = args.flag('watch')
      ? await watch({ ...base, intervalSecs, rounds, onRound: print, onWait: (until, why) => io.err(`epx: waiting until ${waitTime(until)} for ${why} (Ctrl+C stops)`) })
      : [await pullRound(base)]
    if (!args.flag('watch')) print(reports[0]!)
    else if (reports.length === 0) io.err(`epx: ${targetDate} is over in Europe/Paris: nothing left to watch`)
    return reports.some(r => r.counts.failed > 0) ? 1 : 0
  } finally {
    await client.close()
  }

  function count (v: string | undefined, name: string): number | undefined {
    if (v === undefined) return undefined
    if (!/^[1-9][0-9]*$/.test(v)) throw usageError(spec, `--${name} ${v} is not a positive whole number`)
    return Number(v)
  }
})

/** An instant as UTC and as the Paris wall clock the contract's times are given in. */
function waitTime (at: Date): string {
  const paris = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Paris', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at).replace(', ', ' ')
  return `${at.toISOString().replace(/\.\d{3}Z$/, 'Z')} (${paris} Europe/Paris)`
}

function printRound (r: RoundReport, io: CliIo, json: boolean): void {
  if (json) {
    io.out(JSON.stringify(r))
    return
  }
  for (const x of r.outcomes) {
    if (x.result === 'fetched') io.out(`fetched    ${x.siteId} ${r.targetDate} emitted_at ${x.emittedAt} -> ${x.file}`)
    else if (x.result === 'unchanged') io.out(`unchanged  ${x.siteId} ${r.targetDate} (304)`)
    else if (x.result === 'missing') io.out(`missing    ${x.siteId} ${r.targetDate}: not published yet; retry in ${x.retryAfterSecs} s at the earliest`)
    else io.err(`failed     ${x.siteId} ${r.targetDate}: ${x.why}`)
  }
  const c = r.counts
  io.out(`${r.targetDate}: fetched ${c.fetched}, unchanged ${c.unchanged}, missing ${c.missing}, failed ${c.failed}`)
}
