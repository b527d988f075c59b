/**
 * Row: an operator's worst day, as an operator would try it. The daemon (the built host in
 * a child process, the door in its worker: the default) serves keep-alive clients that GET
 * and POST; its inspector is opened with `SIGUSR1` (on a port of its own, `--inspect-port`),
 * and through it (Chrome DevTools Protocol: `NodeWorker.sendMessageToWorker`) an exception
 * is thrown on the door's thread's event loop, again and again. The daemon must live
 * through every one, its door back each time, every 202 in its store.
 * @module
 */
import { createServer } from 'node:net'
import { loadavg } from 'node:os'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { request, WebSocket } from 'undici'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { OUTBOUND_PATH } from '../../src/http/route.ts'
import { agentFor, seedDataDir, startHost, targetDate, tempDir } from './daemon.ts'
import { all, info, zero, type Figure } from './report.ts'
import { DOOR_BACK_MS, loadText, restartTimes } from './door-faults.ts'

export interface InspectorResult {
  readonly faults: number
  readonly injected: number
  readonly back: number
  readonly backMs: readonly number[]
  readonly alive: boolean
  readonly acks: number
  readonly lost: number
  readonly stderr: string
  /** The daemon's resident memory (kB) before the first fault, its door up a while. */
  readonly rssKb: number
  /** The same after the last fault, its door back. */
  readonly rssAfterKb: number
  /** The clients' answers by status. */
  readonly statuses: Readonly<Record<number, number>>
  readonly load: { readonly start: readonly number[]; readonly end: readonly number[] }
}

export interface InspectorOptions {
  readonly faults: number
  /** Keep-alive clients that GET and POST all along (default 4; 0: the probe alone). */
  readonly clients?: number
  /** The plugin's configuration over the daemon's (e.g. `{ api: { standbyWorker: false } }`). */
  readonly config?: Record<string, unknown>
  /** Between a door back and the next fault (default 1200 ms). */
  readonly pauseMs?: number
}

/** A process's resident memory in kB (Linux), 0 elsewhere. */
const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms))
const freePort = () => new Promise<number>((resolve, reject) => {
  const s = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
    const { port } = s.address() as { port: number }
    s.close(() => resolve(port))
  })
})

/**
 * What an operator types in the door's thread: an exception on its event loop. Only in a
 * thread that listens (the serving door; not its standby, not the programme parser).
 */
export const THROW_WHERE_LISTENING = "process.getActiveResourcesInfo().includes('TCPServerWrap') && setTimeout(() => { throw new Error('thrown from the inspector') }, 0)"

/** A CDP session on the daemon's inspector, attached to its worker threads. */
async function inspect (port: number) {
  const list = await (await request(`http://127.0.0.1:${port}/json/list`)).body.json() as Array<{ webSocketDebuggerUrl: string }>
  const ws = new WebSocket(list[0]!.webSocketDebuggerUrl)
  await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject })
  let id = 0
  const workers = new Map<string, string>()   // sessionId → title
  ws.onmessage = e => {
    const m = JSON.parse(String(e.data)) as { method?: string; params?: { sessionId: string; workerInfo: { title: string } } }
    if (m.method === 'NodeWorker.attachedToWorker') workers.set(m.params!.sessionId, m.params!.workerInfo.title)
    if (m.method === 'NodeWorker.detachedFromWorker') workers.delete(m.params!.sessionId)
  }
  const send = (method: string, params: object) => ws.send(JSON.stringify({ id: ++id, method, params }))
  send('NodeWorker.enable', { waitForDebuggerOnStart: false })
  return {
    /** Throws on the event loop of the worker thread that listens now (the door's). */
    throwInWorkers (): number {
      for (const sessionId of workers.keys()) {
        send('NodeWorker.sendMessageToWorker', {
          sessionId,
          message: JSON.stringify({ id: ++id, method: 'Runtime.evaluate', params: { expression: THROW_WHERE_LISTENING } }),
        })
      }
      return workers.size
    },
    close: () => ws.close(),
  }
}

export async function inspectorFaults (o: InspectorOptions): Promise<InspectorResult> {
  const dataDir = tempDir('inspector')
  const { bsp } = await seedDataDir(dataDir, [{ id: 'bsp' }])
  const inspectPort = await freePort()
  // The solver's cycles every second, as soak.ts runs them: a solver takes its queue (no cycle: every input handed stays queued, and the RSS after the faults is that queue's).
  const host = await startHost({ dataDir, sites: 8, cycleSeconds: 1, ...(o.config ? { config: o.config } : {}) }, { execArgv: [`--inspect-port=127.0.0.1:${inspectPort}`] })
  const loadStart = loadavg()
  const acks: Array<{ id: string; siteId: string }> = []
  const backMs: number[] = []
  let injected = 0
  let running = true
  const agents = Array.from({ length: o.clients ?? 4 }, () => agentFor(bsp.cert, 1))
  const day = targetDate()
  const outbound = `${host.origin}${OUTBOUND_PATH}?site_id=PRM30000000000001&target_date=${day}`
  // Each client its own site and an emitted_at of its own, always later, never ahead of the daemon's clock.
  const emittedFrom = Math.floor(Date.now() / 1000) * 1000 - 86_400_000
  let seq = 0
  const statuses: Record<number, number> = {}
  const count = (s: number) => { statuses[s] = (statuses[s] ?? 0) + 1 }
  const clients = agents.map((agent, n) => (async () => {
    while (running) {
      try {
        const get = await request(outbound, { dispatcher: agent, headers: { authorization: `Bearer ${bsp.outbound}` } })
        await get.body.dump()
        const body = programme({ targetDate: day, sites: [`PRM3000000000000${n + 2}`], emittedAt: new Date(emittedFrom + ++seq * 1000).toISOString().replace('.000Z', 'Z') })
        const post = await request(`${host.origin}${INBOUND_PATH}`, {
          method: 'POST', dispatcher: agent, body: JSON.stringify(body), headers: { authorization: `Bearer ${bsp.inbound}`, 'content-type': 'application/json' },
        })
        const text = await post.body.text()
        count(get.statusCode)
        count(post.statusCode)
        if (post.statusCode === 202) {
          const i = JSON.parse(text).instructions[0]
          acks.push({ id: i.instruction_id, siteId: i.site_id })
        }
      } catch { await sleep(5) }
    }
  })())
  const probe = agentFor(bsp.cert, 1)
  const answers = async () => {
    try {
      const res = await request(outbound, { dispatcher: probe, headers: { authorization: `Bearer ${bsp.outbound}`, connection: 'close' }, headersTimeout: 1000 })
      await res.body.dump()
      return res.statusCode === 404 || res.statusCode === 200
    } catch { return false }
  }
  let rssKb = 0
  try {
    // Traffic a while first: the door's standby (when on) is open and waiting.
    await sleep(3000)
    rssKb = rssOf(host.child.proc.pid!)
    process.kill(host.child.proc.pid!, 'SIGUSR1')
    await sleep(500)
    const cdp = await inspect(inspectPort)
    try {
      for (let i = 0; i < o.faults && host.child.alive; i++) {
        await sleep(o.pauseMs ?? 1200)   // traffic; a worker up a second restarts at once
        for (let k = 0; k < 50 && cdp.throwInWorkers() === 0; k++) await sleep(20)
        injected++
        const at = Date.now()
        await sleep(50)
        while (!(await answers()) && Date.now() - at < 15_000 && host.child.alive) await sleep(10)
        backMs.push(Date.now() - at)
      }
    } finally {
      cdp.close()
    }
  } finally {
    running = false
    await Promise.all(clients)
    await Promise.all([...agents, probe].map(a => a.close()))
  }
  const alive = host.child.alive
  const rssAfterKb = alive ? rssOf(host.child.proc.pid!) : 0
  const stderr = host.child.stderrTail
  await host.child.stop(5000)
  const store = openStore(join(dataDir, 'epx.lmdb'))
  const instructions = openInstructions(store)
  const lost = acks.filter(a => !instructions.get(a.id, a.siteId)).length
  await store.close()
  return { faults: o.faults, injected, back: backMs.filter(ms => ms < 15_000).length, backMs, alive, acks: acks.length, lost, stderr, rssKb, rssAfterKb, load: { start: loadStart, end: loadavg() }, statuses }
}

export function inspectorFaultsFigures (r: InspectorResult): Figure[] {
  return [
    all('exceptions thrown in the door\'s thread from the inspector', r.injected, r.faults),
    { name: 'daemon alive afterwards', value: r.alive ? 'yes' : 'no', target: 'yes', met: r.alive },
    all('door answering again after each', r.back, r.faults),
    info(`door back within ${DOOR_BACK_MS} ms`, `${r.backMs.filter(ms => ms < DOOR_BACK_MS).length}/${r.backMs.length}`),
    info('back after (ms, p50 / p95 / max)', restartTimes(r.backMs)),
    info('load average (1, 5, 15 min) at start / end', `${loadText(r.load.start)} / ${loadText(r.load.end)}`),
    zero(`202s not in the store (of ${r.acks})`, r.lost),
    zero(`5xx answers (answers: ${JSON.stringify(r.statuses)})`, Object.entries(r.statuses).filter(([s]) => Number(s) >= 500).reduce((n, [, c]) => n + c, 0)),
    ...(!r.alive ? [info('daemon stderr (tail)', r.stderr.replace(/\s+/g, ' ').slice(-300))] : []),
  ]
}
