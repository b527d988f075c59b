/**
 * Row 4: a damaged store file (DECISIONS.md "Robustness": a damaged store never ends the
 * host). A seeded data folder's `epx.lmdb/data.mdb` is zeroed at its start (both meta
 * pages), truncated to half, or overwritten with random bytes; a solver host then
 * activates epx on it, in a child process so the campaign outlives a native crash. The
 * host must stay up and activation must reject with EPX_STORE_OPEN_FAILED.
 * @module
 */
import { openSync, closeSync, writeSync, statSync, truncateSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { Child } from '../helpers/child.ts'
import { HOST_JS, seedDataDir, tempDir } from './daemon.ts'
import { all, info, type Figure } from './report.ts'

export const DAMAGES = {
  'zeroed start (16 KiB)': (file: string) => overwrite(file, Buffer.alloc(16 * 1024)),
  'truncated to half': (file: string) => truncateSync(file, Math.floor(statSync(file).size / 2)),
  'garbage (first 64 KiB random)': (file: string) => overwrite(file, randomBytes(64 * 1024)),
} as const

function overwrite (file: string, bytes: Buffer): void {
  const fd = openSync(file, 'r+')
  try { writeSync(fd, bytes, 0, Math.min(bytes.length, statSync(file).size), 0) } finally { closeSync(fd) }
}

export interface DamageCase {
  readonly damage: string
  readonly alive: boolean
  readonly code?: string
  /** What happened: the rejection's message, or how the host died. */
  readonly outcome: string
}

export async function damagedStores (): Promise<DamageCase[]> {
  const out: DamageCase[] = []
  for (const [damage, apply] of Object.entries(DAMAGES)) {
    const dataDir = tempDir('damaged')
    await seedDataDir(dataDir, [{ id: 'bsp' }])
    apply(join(dataDir, 'epx.lmdb/data.mdb'))
    const child = new Child('damaged-host', HOST_JS, { tsx: false, env: { CAMPAIGN_HOST: JSON.stringify({ dataDir, sites: 3 }) } })
    try {
      const a = await child.next('activation', 30_000)
      // Still up a moment later: a rejection that leaves a native crash behind would show here.
      await new Promise(r => setTimeout(r, 300))
      out.push({ damage, alive: child.alive, code: a.ok ? 'activated' : String(a.code), outcome: a.ok ? 'activation succeeded on a damaged file' : String(a.message).slice(0, 200) })
    } catch (err) {
      out.push({ damage, alive: child.alive, outcome: String((err as Error).message).split('\n')[0]!.slice(0, 200) })
    } finally {
      await child.stop(2000)
    }
  }
  return out
}

export function damagedStoreFigures (cases: readonly DamageCase[]): Figure[] {
  return [
    info('cases', cases.map(c => c.damage).join(', ')),
    all('host process alive after activation', cases.filter(c => c.alive).length, cases.length),
    all('activation rejected with EPX_STORE_OPEN_FAILED', cases.filter(c => c.code === 'EPX_STORE_OPEN_FAILED').length, cases.length),
    ...cases.filter(c => !c.alive || c.code !== 'EPX_STORE_OPEN_FAILED').map(c => info(`  ${c.damage}`, c.outcome)),
  ]
}
