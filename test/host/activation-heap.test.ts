// Activate/close in one process must not grow the heap.
import t from 'tap'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'

const root = resolve(import.meta.dirname, '../..')
// The system tier (`npm run test:system`) runs 100 cycles (~6 s of CPU less than 300); `npm run test:activation-heap`
// runs 300 (EPX_HEAP_CYCLES).
const CYCLES = Number(process.env.EPX_HEAP_CYCLES ?? 100)

/**
 * Without coverage: V8 keeps compiled code alive for it, and every activation compiles
 * its validators, so a covered child grows by design. (tap's process tracking puts its
 * hooks back into a child's NODE_OPTIONS; its own switch turns its coverage off.)
 */
function childEnv (): NodeJS.ProcessEnv {
  const { NODE_OPTIONS, NODE_V8_COVERAGE, ...env } = process.env
  return { ...env, _TAPJS_PROCESSINFO_COVERAGE_: '0', EPX_HEAP_CYCLES: String(CYCLES) }
}

/** Runs the cycles in a fresh process with --expose-gc, so this test's own heap is not measured. */
function runCycles (): Promise<{ heapMb: Record<string, number>; statuses: string[] }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import=./test/helpers/ts-loader.mjs', 'test/host/fixtures/activation-cycles.ts'], {
      cwd: root, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'],
    })
    // A timed-out test must not leave its cycles running (seen: one kept a core busy after tap gave up).
    t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL') })
    let out = ''
    let err = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { err += d })
    child.once('error', fail)
    child.once('close', code => {
      if (code !== 0) return fail(new Error(`cycles exited with ${code}: ${err}`))
      try { ok(JSON.parse(out.trim().split('\n').pop()!)) } catch (e) { fail(new Error(`${(e as Error).message}: ${out} ${err}`)) }
    })
  })
}

t.test(`${CYCLES} activate/close cycles of the built plugin (${CYCLES - 50} back to back, 50 with a GET and a POST) leave the heap flat (± 2 %)`, async t => {
  const { heapMb, statuses } = await runCycles()
  t.same(statuses, ['GET 404', 'POST 202'], 'every cycle really served a GET and a POST')
  const base = heapMb['50']!
  for (const at of [String(CYCLES - 25), String(CYCLES)]) {
    const ratio = heapMb[at]! / base
    t.ok(ratio >= 0.98 && ratio <= 1.02, `heap after cycle ${at} (${heapMb[at]} MB) within 2 % of cycle 50 (${base} MB): ${((ratio - 1) * 100).toFixed(1)} %`)
  }
})
