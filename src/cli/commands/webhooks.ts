/**
 * `epx webhook add|list|log|remove|rotate-secret|redeliver`: the endpoints a company's
 * events are POSTed to (DECISIONS.md "Events for BSPs"). `add` checks the endpoint
 * (`GET <url>?echo=<random>` answered 200 with the value) and prints its `whsec_` secret
 * once, alone on the last line, as `rotate-secret` prints the new one. Every change is
 * audited, never with a secret. A running epx sees a change at its next event, or within
 * 30 s (webhooks/deliverer.ts).
 * @module
 */
import { EpxError } from '../../errors.ts'
import { openCompanies } from '../../store/companies.ts'
import { cliActor, openAudit } from '../../store/audit.ts'
import { EVENT_TYPES, eventId, openEvents, seqOfEventId, type EventType } from '../../store/events.ts'
import { openWebhooks, type WebhookEndpoint, type Webhooks } from '../../store/webhooks.ts'
import type { Store } from '../../store/open-store.ts'
import { connectOptionsOf } from '../../webhooks/echo-check.ts'
import { addEndpoint, MAX_OVERLAP_HOURS, OVERLAP_HOURS, redeliver as redeliverFrom, removeEndpoint, rotateSecret, type WebhookChanges } from '../../webhooks/changes.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { printList } from '../table.ts'
import { checkCompanyId } from './companies.ts'

const WEBHOOK_ID = /^wh_[0-9a-f]{16}$/

function checkWebhookId (id: string, spec: CommandSpec): string {
  if (!WEBHOOK_ID.test(id)) throw usageError(spec, `'${id}' is not a webhook id (wh_ and 16 hex digits, see 'epx webhook list')`)
  return id
}

function endpointOf (hooks: Webhooks, id: string): WebhookEndpoint {
  const e = hooks.get(id)
  if (!e) throw new EpxError('EPX_NOT_FOUND', [`no webhook '${id}' (see 'epx webhook list')`])
  return e
}

/** A change made from this command line, audited as the operator's. */
function changesOf (store: Store): WebhookChanges {
  return { store, audit: openAudit(store), actor: cliActor(), now: Date.now }
}

const addSpec: CommandSpec = {
  usage: 'epx webhook add COMPANY URL [--types TYPE,...] [--json]',
  summary: 'register an endpoint for a company\'s events; prints its secret once, on the last line',
  about: [
    'Registers an HTTPS endpoint to which the company\'s events are POSTed, signed as Standard',
    'Webhooks 1.0 has it, from its next event on. First checked: GET URL?echo=VALUE must answer',
    '200 with VALUE as its body. Only https, and never a loopback, private or link-local address',
    `unless webhooks.allowPrivateNetworks. Types: ${EVENT_TYPES.join(', ')} (default: all).`,
    'The secret (whsec_...) is shown once, alone on the last line: give it to the receiver now.',
  ].join('\n'),
  positionals: ['COMPANY', 'URL'],
  options: {
    types: { type: 'string', arg: 'TYPE,...', help: 'the event types it wants (default: all)' },
    json: { type: 'boolean', help: 'print { id, company, url, types, secret } as JSON' },
  },
}

function readTypes (text: string | undefined): EventType[] {
  if (text === undefined) return [...EVENT_TYPES]
  const types = [...new Set(text.split(',').map(s => s.trim()).filter(Boolean))]
  const bad = types.filter(x => !(EVENT_TYPES as readonly string[]).includes(x))
  if (!types.length || bad.length) throw usageError(addSpec, `--types ${text}: ${bad.length ? `unknown ${bad.map(b => `'${b}'`).join(', ')}; ` : ''}the types are ${EVENT_TYPES.join(', ')}`)
  return types as EventType[]
}

const add = defineCommand(addSpec, async (args, io) => {
  const companyId = checkCompanyId(args.positionals[0]!, addSpec)
  const types = readTypes(args.string('types'))
  const added = await withStore(io.dataDir, async (store, settings) => {
    if (!openCompanies(store).get(companyId)) throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}' (see 'epx company list')`])
    return addEndpoint(changesOf(store), connectOptionsOf(settings.config.webhooks, io.dataDir), companyId, args.positionals[1]!, types)
  })
  const secret = added.secrets[0]!.secret
  if (args.flag('json')) {
    io.out(JSON.stringify({ id: added.id, company: companyId, url: added.url, types, secret }, null, 2))
    return
  }
  io.out(`added webhook ${added.id} for company ${companyId}: ${added.url}`)
  io.out(`  types: ${types.join(', ')}; from the company's next event on`)
  io.out('the signing secret follows, shown this once; give it to the receiver now:')
  io.out(secret)
})

const listSpec: CommandSpec = {
  usage: 'epx webhook list [--company ID] [--json]',
  summary: 'list endpoints with their state (never a secret)',
  about: [
    'Lists the endpoints: company, URL, types, state (delivering; retrying, with the attempts and the',
    'next try; failing since when; paused while the company is suspended) and the last event delivered.',
    '`epx webhook log ID` shows the attempts.',
  ].join('\n'),
  options: {
    company: { type: 'string', arg: 'ID', help: 'only the endpoints of this company' },
    json: { type: 'boolean', help: 'print a JSON array' },
  },
}

const list = defineCommand(listSpec, async (args, io) => {
  const companyId = args.string('company')
  if (companyId !== undefined) checkCompanyId(companyId, listSpec)
  const shown = await withStore(io.dataDir, store => {
    const hooks = openWebhooks(store)
    const companies = openCompanies(store)
    return hooks.list(companyId).map(e => {
      const s = hooks.stateOf(e.id)
      const state = e.failingSince ? `failing since ${e.failingSince}`
        : companies.get(e.companyId)?.status !== 'active' ? 'paused: the company is suspended'
        : s.retry ? `retrying (${s.retry.attempts} failed, next ${new Date(s.retry.nextMs).toISOString()})` : 'delivering'
      // Explicit fields: the secrets never leave the store here.
      return { id: e.id, company: e.companyId, url: e.url, types: e.types, state, delivered: eventId(s.cursor), createdAt: e.createdAt, failingSince: e.failingSince ?? null }
    })
  })
  printList(io.out, args.flag('json'), shown, {
    empty: companyId ? `no webhooks for company ${companyId}` : 'no webhooks yet (epx webhook add COMPANY URL)',
    header: ['ID', 'COMPANY', 'URL', 'TYPES', 'STATE', 'DELIVERED UP TO'],
    row: e => [e.id, e.company, e.url, e.types.length === EVENT_TYPES.length ? 'all' : e.types.join(','), e.state, e.delivered],
  })
})

const logSpec: CommandSpec = {
  usage: 'epx webhook log ID [--limit N] [--json]',
  summary: 'an endpoint\'s last delivery attempts: event, status or error, latency, next try',
  about: 'The last delivery attempts of an endpoint, newest first (the last 100 are kept).',
  positionals: ['ID'],
  options: {
    limit: { type: 'string', arg: 'N', help: 'at most N attempts (default 20)' },
    json: { type: 'boolean', help: 'print a JSON array' },
  },
}

const log = defineCommand(logSpec, async (args, io) => {
  const id = checkWebhookId(args.positionals[0]!, logSpec)
  const limitText = args.string('limit') ?? '20'
  const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : 0
  if (limit < 1) throw usageError(logSpec, `--limit ${limitText}: a whole number from 1 to 999`)
  const attempts = await withStore(io.dataDir, store => {
    const hooks = openWebhooks(store)
    endpointOf(hooks, id)
    return hooks.log(id, limit).map(l => ({
      at: new Date(l.atMs).toISOString(), eventId: l.eventId, status: l.status ?? null, error: l.error ?? null, latencyMs: l.latencyMs,
      nextTry: l.nextTryMs === undefined ? null : new Date(l.nextTryMs).toISOString(),
    }))
  })
  printList(io.out, args.flag('json'), attempts, {
    empty: `no delivery attempts yet for ${id}`,
    header: ['AT', 'EVENT', 'RESULT', 'LATENCY', 'NEXT TRY'],
    row: a => [a.at, a.eventId || '-', a.status !== null ? String(a.status) : a.error ?? '-', `${a.latencyMs} ms`, a.nextTry ?? '-'],
  })
})

const removeSpec: CommandSpec = {
  usage: 'epx webhook remove ID',
  summary: 'remove an endpoint: nothing more is sent to it',
  about: 'Removes an endpoint, its delivery state and its log. The company\'s events stay in the feed.',
  positionals: ['ID'],
}

const remove = defineCommand(removeSpec, async (args, io) => {
  const id = checkWebhookId(args.positionals[0]!, removeSpec)
  const e = await withStore(io.dataDir, store => {
    const hooks = openWebhooks(store)
    const e = endpointOf(hooks, id)
    return removeEndpoint(changesOf(store), e).then(() => e)
  })
  io.out(`removed webhook ${id} of company ${e.companyId} (${e.url})`)
})

const rotateSpec: CommandSpec = {
  usage: 'epx webhook rotate-secret ID [--overlap-hours H]',
  summary: 'a new signing secret; the old one signs beside it for the overlap; prints the new one once',
  about: [
    'Gives an endpoint a new secret. For the overlap (default 24 h) each delivery carries two',
    'signatures, one per secret, so the receiver can switch whenever it likes within it. The new',
    'secret is shown once, alone on the last line.',
  ].join('\n'),
  positionals: ['ID'],
  options: { 'overlap-hours': { type: 'string', arg: 'H', help: `hours the old secret still signs (default ${OVERLAP_HOURS}, 0 to ${MAX_OVERLAP_HOURS})` } },
}

const rotate = defineCommand(rotateSpec, async (args, io) => {
  const id = checkWebhookId(args.positionals[0]!, rotateSpec)
  const hoursText = args.string('overlap-hours') ?? String(OVERLAP_HOURS)
  const hours = /^\d{1,3}$/.test(hoursText) ? Number(hoursText) : NaN
  if (!(hours <= MAX_OVERLAP_HOURS)) throw usageError(rotateSpec, `--overlap-hours ${hoursText}: a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}`)
  const { e, secret, oldUntilMs } = await withStore(io.dataDir, async store => {
    const e = endpointOf(openWebhooks(store), id)
    return { e, ...await rotateSecret(changesOf(store), e, hours) }
  })
  io.out(`webhook ${id} of company ${e.companyId} signs with a new secret; the previous one signs beside it until ${new Date(oldUntilMs).toISOString()}`)
  io.out('the new secret follows, shown this once:')
  io.out(secret)
})

const redeliverSpec: CommandSpec = {
  usage: 'epx webhook redeliver ID [--from EVENT_ID]',
  summary: 'deliver again from an event on (moves the cursor back); resumes a failing endpoint',
  about: [
    'Moves the endpoint\'s cursor so the next delivery is EVENT_ID (an event id as the feed gives it),',
    'and the ones after it, in order. Without --from, goes on from where it stopped. Either way a',
    'failing endpoint is tried again and its retries start afresh.',
  ].join('\n'),
  positionals: ['ID'],
  options: { from: { type: 'string', arg: 'EVENT_ID', help: 'the first event to deliver again' } },
}

const redeliver = defineCommand(redeliverSpec, async (args, io) => {
  const id = checkWebhookId(args.positionals[0]!, redeliverSpec)
  const fromText = args.string('from')
  const from = fromText === undefined ? undefined : seqOfEventId(fromText)
  if (fromText !== undefined && !(from !== undefined && from >= 1)) throw usageError(redeliverSpec, `--from ${fromText}: an event id, digits as the feed gives it (e.g. 000000000000042)`)
  const { e, next } = await withStore(io.dataDir, async store => {
    const e = endpointOf(openWebhooks(store), id)
    const last = openEvents(store).lastSeq(e.companyId)
    if (from !== undefined && from > last) throw new EpxError('EPX_NOT_FOUND', [`company ${e.companyId} has no event ${fromText}: its last is ${eventId(last)}`])
    return { e, next: await redeliverFrom(changesOf(store), e, from) }
  })
  io.out(`webhook ${id} of company ${e.companyId} delivers again from event ${next} on, in order${e.failingSince ? ` (it was failing since ${e.failingSince})` : ''}`)
})

export const webhookSubcommands: readonly Command[] = [add, list, log, remove, rotate, redeliver]
