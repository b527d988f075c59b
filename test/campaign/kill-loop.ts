/**
 * Row 1: `kill -9` at a random moment while concurrent multi-site programmes are being
 * posted, then a restart. DECISIONS.md "Inbound": a 202 means "it survives a crash", and a
 * programme is stored all its sites or none. After each restart the store is read (a
 * second reader beside the restarted daemon, as LMDB allows): every programme answered 202
 * must be there whole (every site, every period), and no programme may be there in part.
 * @module
 */
import { join } from 'node:path'
import { request, type Agent } from 'undici'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { deriveInstructionId } from '../../src/contract/ids.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { agentFor, seedDataDir, startHost, targetDate, tempDir } from './daemon.ts'
import { atLeast, info, zero, type Figure } from './report.ts'

export interface KillLoopOptions {
  readonly cycles: number
  /** Concurrent posters. */
  readonly posters?: number
  /** The kill falls uniformly in [min, max] ms after the daemon is ready. */
  readonly killAfterMs?: readonly [number, number]
  /** The whole row stops starting cycles after this long. */
  readonly budgetMs: number
  readonly dataDir?: string
  /** The plugin's configuration, over the daemon's defaults (e.g. `{ api: { inWorker: false } }`). */
  readonly config?: Record<string, unknown>
}

interface Sent {
  readonly instructionId: string
  readonly siteIds: readonly string[]
  readonly slots: number
  /** Per site, the sum of its energies: a stored period with the wrong value shows. */
  readonly energy: readonly number[]
  acked: boolean
}

const SITES = 20
const MAX_SITES_PER_PROGRAMME = 8

export interface KillLoopResult {
  readonly cycles: number
  readonly acked: number
  readonly sent: number
  readonly lost: number
  readonly partial: number
  readonly firstProblem?: string
}

export async function killLoop (o: KillLoopOptions): Promise<KillLoopResult> {
  const dataDir = o.dataDir ?? tempDir('kill')
  const { bsp } = await seedDataDir(dataDir, [{ id: 'bsp' }])
  const day = targetDate()
  const sent: Sent[] = []
  // Sets: the last check reads every programme again, and one loss counts once.
  const lost = new Set<string>()
  const partial = new Set<string>()
  let firstProblem: string | undefined
  // Unique, increasing instants: every programme is its own instruction id.
  // From two days before: every emitted_at stays behind the server's clock (inbound.maxClockSkewSeconds).
  let emitted = Date.parse(`${day}T00:00:00Z`) - 2 * 86_400_000
  const deadline = Date.now() + o.budgetMs
  const [killMin, killMax] = o.killAfterMs ?? [50, 600]

  /** Reads the store beside the running daemon; counts what the cycle's programmes left. */
  const check = async (batch: readonly Sent[]) => {
    const store = openStore(join(dataDir, 'epx.lmdb'))
    try {
      const instructions = openInstructions(store)
      for (const p of batch) {
        const whole = (site: string, i: number) => {
          const got = instructions.get(p.instructionId, site)
          return got !== undefined && got.slots.length === p.slots && got.slots.reduce((a, x) => a + x[1], 0) === p.energy[i]
        }
        const found = p.siteIds.filter(whole).length
        const present = p.siteIds.filter(s => instructions.get(p.instructionId, s) !== undefined).length
        if (p.acked && found < p.siteIds.length) {
          lost.add(p.instructionId)
          firstProblem ??= `${p.instructionId}: answered 202, ${found} of ${p.siteIds.length} sites found whole after restart`
        }
        if (present > 0 && present < p.siteIds.length) {
          partial.add(p.instructionId)
          firstProblem ??= `${p.instructionId}: ${present} of ${p.siteIds.length} sites stored`
        }
      }
    } finally {
      await store.close()
    }
  }

  let host = await startHost({ dataDir, sites: SITES, config: o.config })
  let cycles = 0
  try {
    while (cycles < o.cycles && Date.now() < deadline) {
      const agent: Agent = agentFor(bsp.cert, o.posters ?? 4)
      const mine: Sent[] = []
      let killed = false
      const poster = async () => {
        // Bounded by the kill: after it, every request fails and the poster stops.
        for (let i = 0; i < 10_000 && !killed; i++) {
          const n = 1 + Math.floor(Math.random() * MAX_SITES_PER_PROGRAMME)
          const first = 1 + Math.floor(Math.random() * (SITES - n + 1))
          const ms = (emitted += 1000)
          // Multiples of 0.25 kWh: sums are exact in floating point.
          const kwh = (j: number, k: number) => ((ms / 1000 + j + k) % 8) * 0.25
          const body = programme({ targetDate: day, emittedAt: new Date(ms).toISOString(), sites: Array.from({ length: n }, (_, k) => siteId(first + k)), kwh })
          const p: Sent = {
            instructionId: deriveInstructionId(day, { ms, nanos: 0 }), siteIds: body.sites.map(s => s.site_id), slots: body.sites[0]!.energie_programmee.length,
            energy: body.sites.map(s => s.energie_programmee.reduce((a, x) => a + x.energie_kwh, 0)), acked: false,
          }
          mine.push(p)
          try {
            const res = await request(`${host.origin}${INBOUND_PATH}`, {
              method: 'POST', dispatcher: agent, body: JSON.stringify(body),
              headers: { authorization: `Bearer ${bsp.inbound}`, 'content-type': 'application/json' },
              headersTimeout: 10_000, bodyTimeout: 10_000,
            })
            await res.body.dump()
            if (res.statusCode === 202) p.acked = true
            else if (!killed) throw new Error(`POST answered ${res.statusCode} before the kill`)
          } catch (err) {
            if (!killed) throw err
          }
        }
      }
      const posting = Promise.allSettled(Array.from({ length: o.posters ?? 4 }, poster))
      await new Promise(r => setTimeout(r, killMin + Math.random() * (killMax - killMin)))
      killed = true
      host.child.kill()
      const outcomes = await posting
      await agent.destroy().catch(() => {})
      const broken = outcomes.find(x => x.status === 'rejected')
      if (broken) throw (broken as PromiseRejectedResult).reason
      cycles++
      sent.push(...mine)
      host = await startHost({ dataDir, sites: SITES, config: o.config })
      await check(mine)
    }
    // Once more over everything: a later restart must not lose what an earlier one kept.
    await check(sent)
  } finally {
    host.child.kill()
  }
  return { cycles, acked: sent.filter(p => p.acked).length, sent: sent.length, lost: lost.size, partial: partial.size, firstProblem }
}

export function killLoopFigures (r: KillLoopResult, minCycles: number): Figure[] {
  return [
    atLeast('kill -9 cycles', r.cycles, minCycles),
    info('programmes posted (1–8 sites each)', r.sent),
    info('programmes answered 202', r.acked),
    zero('answered 202, not found whole after restart (lost)', r.lost),
    zero('stored in part (some sites only)', r.partial),
    ...(r.firstProblem ? [info('first problem', r.firstProblem)] : []),
  ]
}
