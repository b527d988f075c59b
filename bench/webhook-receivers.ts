/**
 * The BSPs' webhook endpoints of the webhook row (bench/webhooks.ts), in a process of
 * their own so that their CPU is not counted as epx's: N HTTPS servers on 127.0.0.1 under
 * the bench's server certificate, each the BSP kit's receiver (`webhookReceiver`,
 * src/bsp/receiver.ts: the registration's echo check, the Standard Webhooks signature
 * verified with the endpoint's secret), answering 200 after an optional fixed latency.
 * No `seen` ids: every verified delivery reaches `onEvent`, so a repeat is counted here.
 *
 * Messages: `listen` {count, certFile, keyFile, latencyMs} → `listening` {ports};
 * `secrets` {secrets} → `secretsSet`; `expect` {perEndpoint, targetDate} → `expecting`, then
 * `delivered` {lastAtMs} once every endpoint holds that many distinct events; `report` →
 * `report` {endpoints} (what each one received since `expect`).
 * @module
 */
import { createServer, type Server } from 'node:https'
import { readFileSync } from 'node:fs'
import { setPriority } from 'node:os'
import type { AddressInfo } from 'node:net'
import { webhookReceiver } from '../src/bsp/receiver.ts'
import type { BspEvent } from '../src/bsp/client.ts'
import { send } from './servers/harness.ts'

/** What one endpoint received since `expect`: counts that say whether each event came once, in id order. */
export interface EndpointReport {
  /** Verified deliveries handed to the receiver, repeats included. */
  readonly received: number
  readonly distinct: number
  readonly repeated: number
  /** Deliveries whose id was not above the one before. */
  readonly outOfOrder: number
  /** Events not `besoins_agreges.publie` of the expected day. */
  readonly unexpected: number
  /** Deliveries the receiver refused (401: signature; 400...), with the first reason. */
  readonly refused: number
  readonly firstRefusal?: string
  readonly firstAtMs?: number
  readonly lastAtMs?: number
}

class Endpoint {
  ids = new Set<string>()
  received = 0
  repeated = 0
  outOfOrder = 0
  unexpected = 0
  refused = 0
  firstRefusal: string | undefined
  lastSeq = -1
  firstAtMs: number | undefined
  lastAtMs: number | undefined
  secret = ''

  reset (): void {
    this.ids.clear()
    this.received = this.repeated = this.outOfOrder = this.unexpected = this.refused = 0
    this.firstRefusal = this.firstAtMs = this.lastAtMs = undefined
    this.lastSeq = -1
  }

  report (): EndpointReport {
    return {
      received: this.received, distinct: this.ids.size, repeated: this.repeated, outOfOrder: this.outOfOrder, unexpected: this.unexpected,
      refused: this.refused, firstRefusal: this.firstRefusal, firstAtMs: this.firstAtMs, lastAtMs: this.lastAtMs,
    }
  }
}

const endpoints: Endpoint[] = []
const servers: Server[] = []
let expected = { perEndpoint: Infinity, targetDate: '' }
let told = false

function checkDone (): void {
  if (told || !endpoints.every(e => e.ids.size >= expected.perEndpoint)) return
  told = true
  send({ type: 'delivered', lastAtMs: Math.max(...endpoints.map(e => e.lastAtMs ?? 0)) })
}

function onEvent (e: Endpoint, event: BspEvent): void {
  // Date.now(): compared with the publication's start, read in epx's process.
  const at = Date.now()
  e.received++
  e.firstAtMs ??= at
  const seq = Number(event.id)
  if (seq <= e.lastSeq) e.outOfOrder++
  e.lastSeq = Math.max(e.lastSeq, seq)
  const fields = event as unknown as { type: string; target_date?: string }
  if (fields.type !== 'besoins_agreges.publie' || fields.target_date !== expected.targetDate) e.unexpected++
  if (e.ids.has(event.id)) e.repeated++
  else {
    e.ids.add(event.id)
    e.lastAtMs = at
  }
  checkDone()
}

async function listen (count: number, certFile: string, keyFile: string, latencyMs: number): Promise<number[]> {
  const tls = { cert: readFileSync(certFile), key: readFileSync(keyFile) }
  const pause = (): Promise<void> => new Promise(resolve => setTimeout(resolve, latencyMs))
  for (let k = 0; k < count; k++) {
    const e = new Endpoint()
    const server = createServer(tls, webhookReceiver({
      secret: () => e.secret,
      onEvent: latencyMs > 0 ? async event => { onEvent(e, event); await pause() } : event => onEvent(e, event),
      onRefused: r => { if (r.method === 'POST') { e.refused++; e.firstRefusal ??= `${r.status}: ${r.reason}` } },
    }))
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    endpoints.push(e)
    servers.push(server)
  }
  return servers.map(s => (s.address() as AddressInfo).port)
}

// A BSP's receiver runs on another machine: here, niced, it never takes a core from the solver's thread.
if (process.env.BENCH_RECEIVERS_NICE) setPriority(process.pid, Number(process.env.BENCH_RECEIVERS_NICE))
const deadlineMs = Number(process.env.BENCH_CHILD_DEADLINE_MS ?? 20 * 60_000)
setTimeout(() => process.exit(3), deadlineMs).unref()
process.on('disconnect', () => process.exit(0))
process.on('message', (m: { type: string; [k: string]: unknown }) => {
  void (async () => {
    try {
      if (m.type === 'listen') send({ type: 'listening', ports: await listen(Number(m.count), String(m.certFile), String(m.keyFile), Number(m.latencyMs ?? 0)) })
      else if (m.type === 'secrets') { (m.secrets as string[]).forEach((s, k) => { endpoints[k]!.secret = s }); send({ type: 'secretsSet' }) }
      else if (m.type === 'expect') {
        for (const e of endpoints) e.reset()
        expected = { perEndpoint: Number(m.perEndpoint), targetDate: String(m.targetDate) }
        told = false
        send({ type: 'expecting' })
      } else if (m.type === 'report') send({ type: 'report', endpoints: endpoints.map(e => e.report()) })
      else if (m.type === 'exit') process.exit(0)
    } catch (err) {
      send({ type: 'error', message: String((err as Error)?.stack ?? err) })
    }
  })()
})
send({ type: 'ready' })
