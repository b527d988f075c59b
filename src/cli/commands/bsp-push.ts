/**
 * `epx bsp push FILE`: send a Programme_Soutirage after the server's own checks (src/bsp/push.ts).
 * @module
 */
import { readFileSync } from 'node:fs'
import { parseJson } from '../../apply/parse-json.ts'
import { isEpxError } from '../../errors.ts'
import { pushProgramme } from '../../bsp/push.ts'
import { realTiming } from '../../bsp/timing.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { CliIo } from '../io.ts'
import { connect, connectionOptions } from './bsp.ts'

const spec: CommandSpec = {
  usage: 'epx bsp push --url URL --cert FILE --key FILE [--ca FILE] [--token-file FILE] [--max-site-kw KW] [--json] FILE',
  dataDir: false,
  summary: 'check a Programme_Soutirage as the server does, send it, print each instruction and what will become of it',
  about: [
    'Checks the programme in FILE with the server\'s own schema and rules (the perimeter aside) and',
    'prints every problem as the server would (JSON Pointer: what to fix) without sending it; this',
    'includes an emitted_at more than 300 s ahead of this machine\'s clock (the server would refuse it:',
    'check the clock and the time zone), and a slot whose power (energie_kwh * 3600 / slot_duration_secs)',
    'is above the server\'s sanity bound, 100000 kW unless --max-site-kw says the service set another',
    '(its inbound.maxSiteKw). Else sends it and prints one',
    'line per instruction: instruction_id site_id periods_count status, status being queued (applied at',
    'the next solver cycle), superseded (a later programme is in force; its id follows when it is',
    'yours) or late (a programme for today whose every period had begun when it was received: kept,',
    'never applied; send the next periods sooner), then how many of its periods were already over.',
    'A 503 or a network error is retried with backoff (safe: the same emitted_at gives the same',
    'instructions). `epx bsp status` tells later what became of them.',
  ].join('\n'),
  options: {
    ...connectionOptions,
    'max-site-kw': { type: 'string', arg: 'KW', help: 'the service\'s sanity bound of a site\'s power (its inbound.maxSiteKw) when it is not the default 100000' },
    json: { type: 'boolean', help: 'print the 202 receipt, or the error body { error: { code, message, details } }, as JSON' },
  },
  positionals: ['FILE'],
}

const INVALID = 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST'

export const pushCommand = defineCommand(spec, async (args, io) => {
  const path = args.positionals[0]!
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (err) {
    throw usageError(spec, `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  const json = args.flag('json')
  const maxSiteKw = kilowatts(args.string('max-site-kw'))
  let programme: unknown
  try {
    programme = parseJson(bytes)
  } catch (err) {
    if (!isEpxError(err) || !err.details) throw err
    return printError(io, json, { code: INVALID, message: 'the file is not a JSON document the server accepts; nothing was sent', details: err.details })
  }
  const client = connect(args, spec)
  try {
    const result = await pushProgramme({
      client, programme, timing: realTiming, maxSiteKw,
      onRetry: (why, ms) => io.err(`epx: ${why}; trying again in ${(ms / 1000).toFixed(1)} s`),
    })
    switch (result.kind) {
      case 'received':
        if (json) io.out(JSON.stringify(result.receipt))
        else {
          for (const i of result.receipt.instructions) {
            io.out(`${i.instruction_id} ${i.site_id} ${i.periods_count} ${i.status ?? 'queued'}${i.superseded_by ? ` by ${i.superseded_by}` : ''}${i.periods_over ? ` (${i.periods_over} over)` : ''}`)
          }
          io.err(`epx: ${result.receipt.message}`)
        }
        return 0
      case 'invalid': {
        const n = Object.keys(result.details).length
        return printError(io, json, { code: INVALID, message: `${n} problem(s) found before sending; nothing was sent`, details: result.details })
      }
      case 'refused':
        return printError(io, json, { code: result.code ?? `HTTP ${result.status}`, message: result.message, details: result.details })
      case 'retry':
        return printError(io, json, { code: result.code ?? `HTTP ${result.status}`, message: `${result.detail}; gave up after retrying`, details: {} })
      case 'unreachable':
        return printError(io, json, { code: 'UNREACHABLE', message: `cannot reach the service: ${result.detail}`, details: {} })
    }
  } finally {
    await client.close()
  }
})

function kilowatts (v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  const kw = Number(v)
  if (v.trim() === '' || !(kw > 0 && kw < Infinity)) throw usageError(spec, `--max-site-kw ${v} is not a positive number of kW`)
  return kw
}

function printError (io: CliIo, json: boolean, e: { code: string; message: string; details: Readonly<Record<string, string>> }): number {
  if (json) io.out(JSON.stringify({ error: e }))
  else {
    io.err(`epx: ${e.code}: ${e.message}`)
    for (const [pointer, why] of Object.entries(e.details)) io.err(`  ${pointer === '' ? '(the body)' : pointer}: ${why}`)
  }
  return 1
}
