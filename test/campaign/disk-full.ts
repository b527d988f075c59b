/**
 * Row 5: a full disk with the host alive (DECISIONS.md "Robustness"; the campaign's form of
 * test/http/disk-full.test.ts). Once the daemon serves, its file size limit is lowered
 * (`prlimit --fsize`, Linux) to 256 KiB over the store's current size, and a programme too
 * big for that is posted: the answer must be 503 NO_STORE, the host must live on, and no
 * unhandled rejection may surface on its stderr.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { request } from 'undici'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { agentFor, seedDataDir, startHost, targetDate, tempDir } from './daemon.ts'
import { info, zero, type Figure } from './report.ts'

export interface DiskFullResult {
  readonly bigStatus: number
  readonly bigCode?: string
  readonly retryAfter?: string
  readonly smallStatus: number
  readonly alive: boolean
  readonly unhandled: number
  readonly stderr: string
}

export async function diskFull (): Promise<DiskFullResult> {
  const dataDir = tempDir('disk-full')
  const { bsp } = await seedDataDir(dataDir, [{ id: 'bsp' }])
  const host = await startHost({ dataDir, sites: 300 })
  const agent = agentFor(bsp.cert, 1)
  try {
    const limit = statSync(join(dataDir, 'epx.lmdb/data.mdb')).size + 256 * 1024
    execFileSync('prlimit', ['--pid', String(host.child.proc.pid), `--fsize=${limit}`])
    const post = async (sites: number) => {
      const res = await request(`${host.origin}${INBOUND_PATH}`, {
        method: 'POST', dispatcher: agent, body: JSON.stringify(programme({ targetDate: targetDate(), sites })),
        headers: { authorization: `Bearer ${bsp.inbound}`, 'content-type': 'application/json' }, headersTimeout: 60_000, bodyTimeout: 60_000,
      })
      const text = await res.body.text()
      let code: string | undefined
      try { code = JSON.parse(text)?.error?.code } catch { /* not JSON */ }
      return { status: res.statusCode, code, retryAfter: res.headers['retry-after'] as string | undefined }
    }
    const big = await post(300)   // ~2.7 MB of JSON, over 1 MB stored: over the limit
    // lmdb-js rejects promises of its own on a failed commit: give them time to go unhandled.
    await new Promise(r => setTimeout(r, 500))
    const small = await post(1).catch(() => ({ status: 0 }))
    await new Promise(r => setTimeout(r, 300))
    const stderr = host.child.stderrTail
    return {
      bigStatus: big.status, bigCode: big.code, retryAfter: big.retryAfter, smallStatus: small.status,
      alive: host.child.alive, unhandled: (stderr.match(/Unhandled|ERR_UNHANDLED_REJECTION/g) ?? []).length, stderr,
    }
  } finally {
    await agent.close().catch(() => {})
    await host.child.stop(3000)
  }
}

export function diskFullFigures (r: DiskFullResult): Figure[] {
  const nostore = r.bigStatus === 503 && r.bigCode === 'NO_STORE'
  return [
    { name: 'programme over the free space: 503 NO_STORE', value: `${r.bigStatus} ${r.bigCode ?? ''}`.trim(), target: '503 NO_STORE', met: nostore },
    info('Retry-After', r.retryAfter ?? 'none'),
    { name: 'host process alive afterwards', value: r.alive ? 'yes' : 'no', target: 'yes', met: r.alive },
    zero('unhandled rejections on the host\'s stderr', r.unhandled),
    info('a one-site programme afterwards', r.smallStatus),
    ...(r.unhandled || !r.alive ? [info('host stderr (tail)', r.stderr.replace(/\s+/g, ' ').slice(0, 200))] : []),
  ]
}
