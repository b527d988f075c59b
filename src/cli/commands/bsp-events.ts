/**
 * `epx bsp events`: the events feed (GET evenements, DECISIONS.md "Events for BSPs"), read
 * from a saved cursor: what changed for your company since the last run, one event a line,
 * then the cursor saved again, only once they are printed (a run cut short prints them again
 * next time: at least once).
 * @module
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import { connect, connectionOptions, readOverApi } from './bsp.ts'

const spec: CommandSpec = {
  usage: 'epx bsp events --url URL --cert FILE --key FILE [--ca FILE] [--token-file FILE] [--cursor-file FILE] [--wait SECONDS] [--limit N] [--json]',
  dataDir: false,
  summary: 'what changed for your company since the saved cursor (the events feed)',
  about: [
    'Reads over the API (GET evenements, a token with the scope outbound:evenements) your company\'s',
    'events after the cursor kept in --cursor-file (none yet: from the oldest kept), oldest first:',
    'a Besoins_Agreges published, an instruction\'s status, a realise changed, your perimeter. With',
    '--wait, a run with nothing new waits up to that many seconds for an event. The cursor is saved',
    'once the events are printed. A cursor older than the events kept (410 CURSOR_EXPIRED): events',
    'were missed; read the state again (epx bsp pull, status, realise), then run with --reset to go on.',
  ].join('\n'),
  options: {
    ...connectionOptions,
    'cursor-file': { type: 'string', arg: 'FILE', help: 'where the cursor is kept: read first, written once the events are printed' },
    wait: { type: 'string', arg: 'SECONDS', help: 'with nothing new, wait up to this many seconds (0 to 30) for an event' },
    limit: { type: 'string', arg: 'N', help: 'at most N events (1 to 1000, default 100)' },
    reset: { type: 'boolean', help: 'after a 410 CURSOR_EXPIRED, once the state is read again: go on from where the service says' },
    json: { type: 'boolean', help: 'one event per line, as the API gives it' },
  },
}

function whole (value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw usageError(spec, `--${name} ${value} is not a whole number from ${min} to ${max}`)
  return Number(value)
}

export const eventsCommand = defineCommand(spec, async (args, io) => {
  const file = args.string('cursor-file')
  const waitSecs = whole(args.string('wait'), 'wait', 0, 30)
  const limit = whole(args.string('limit'), 'limit', 1, 1000)
  let after: string | undefined
  if (file) {
    try { after = readFileSync(file, 'utf8').trim() || undefined } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw usageError(spec, `cannot read --cursor-file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  const save = (cursor: string): void => {
    if (!file) return
    // Whole or not at all: a run cut while writing leaves the previous cursor.
    writeFileSync(`${file}.tmp`, cursor + '\n')
    renameSync(`${file}.tmp`, file)
  }
  if (args.flag('reset')) {
    const client = connect(args, spec)
    try {
      const answer = await client.getEvents({ after, limit: 1 })
      if (answer.kind === 'expired') save(answer.next)
      io.err(answer.kind === 'expired' ? `epx: going on after ${answer.next}` : 'epx: the cursor had not expired: kept')
      return 0
    } finally {
      await client.close()
    }
  }
  return readOverApi(args, spec, io, client => client.getEvents({ after, limit, waitSecs }), answer => {
    if (answer.kind === 'expired') {
      io.err(`epx: CURSOR_EXPIRED: ${answer.message}`)
      io.err('  read the state again (epx bsp pull, epx bsp status, epx bsp realise), then run again with --reset')
      return 1
    }
    for (const e of answer.events) io.out(args.flag('json') ? JSON.stringify(e) : describe(e))
    save(answer.next)
    return 0
  })
})

/** One event in a line: its id, type, and its members. */
function describe (e: { readonly id: string; readonly type: string; readonly occurred_at: string; readonly [k: string]: unknown }): string {
  const { id, type, occurred_at: at, ...rest } = e
  return `${id} ${at} ${type} ${Object.entries(rest).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`).join(' ')}`
}
