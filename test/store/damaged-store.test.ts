import t from 'tap'
import { statSync, truncateSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { dataFolderWithStore, openInOneChild, overwrite } from './fixtures/damaged.ts'

// A damaged store file is refused with EPX_STORE_OPEN_FAILED, a reason
// and what to do; the process lives on. lmdb-js crashes (SIGSEGV, SIGBUS) on such files,
// so the openings run in a child process: a regression fails here instead of killing tap.
// One child opens every folder below in turn (one start of tsx and the plugin instead of
// six); a crash fails the tests of its folder and of those after it, its stderr saying why.

const damages: Array<{ name: string; damage: (file: string) => void; reason: RegExp }> = [
  { name: 'its first two pages zeroed', damage: f => overwrite(f, 0, Buffer.alloc(8192)), reason: /data\.mdb page 0 is not an LMDB meta page/ },
  { name: 'truncated to half its size', damage: f => truncateSync(f, Math.floor(statSync(f).size / 2)), reason: /data\.mdb is \d+ bytes but its last commit .* uses \d+ bytes .*: it was truncated/ },
  { name: 'filled with garbage', damage: f => writeFileSync(f, randomBytes(statSync(f).size)), reason: /data\.mdb (page 0 is not an LMDB meta page|meta page 0 has magic)/ },
  { name: 'its second meta page zeroed', damage: f => overwrite(f, 4096, Buffer.alloc(4096)), reason: /data\.mdb page 1 is not an LMDB meta page/ },
  { name: 'cut inside its header', damage: f => truncateSync(f, 100), reason: /data\.mdb is 100 bytes, shorter than an LMDB header/ },
]

const folders = t.testdir()
const damaged: string[] = []
for (const [i, { damage }] of damages.entries()) {
  const { dir, dataFile } = await dataFolderWithStore(t, join(folders, `damage-${i}`))
  damage(dataFile)
  damaged.push(dir)
}
const empty = await dataFolderWithStore(t, join(folders, 'empty'))
writeFileSync(empty.dataFile, '')
const run = openInOneChild([...damaged, empty.dir])

for (const [i, { name, reason }] of damages.entries()) {
  t.test(`a data.mdb ${name}: openStore and activation fail with EPX_STORE_OPEN_FAILED saying why and what to do; the process lives on`, async t => {
    t.equal(run.signal, null, `no crash (stderr: ${run.stderr.slice(-400)})`)
    t.equal(run.status, 0)
    const [open, activate, alive] = run.attemptsOf[i]!
    for (const attempt of [open, activate]) {
      t.match(attempt, { ok: false, code: 'EPX_STORE_OPEN_FAILED' }, attempt?.step)
      t.match(attempt?.message, reason, 'says which check failed')
      t.match(attempt?.message, /restore a backup made with `epx store backup`.*or move .* aside to start with an empty store \(this loses/, 'says what to do')
    }
    t.same(alive, { step: 'alive', ok: true })
  })
}

t.test('an empty data.mdb (a crash while the store was created) opens as an empty store', async t => {
  t.equal(run.signal, null, run.stderr.slice(-400))
  t.same(run.attemptsOf[damages.length]!.map(a => [a.step, a.ok]), [['openStore', true], ['activate', true], ['alive', true]])
  t.ok(statSync(empty.dataFile).size > 0, 'LMDB wrote its meta pages')
})
