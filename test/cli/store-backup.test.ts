import t from 'tap'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { conformance } from '../helpers/openapi.ts'
import { epx, initializedDataDir, startEpx } from '../helpers/cli.ts'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { addDays, parisDateOf } from '../../src/contract/paris-day.ts'
import { openStore } from '../../src/store/open-store.ts'
import { openInstructions } from '../../src/store/instructions.ts'
import { openRevisions } from '../../src/store/revisions.ts'

// `epx store backup DIR` makes a consistent copy while the service serves and
// writes; the copy, put in place of a fresh data folder's store, holds every programme
// acknowledged (202) before the backup started.
t.test('epx store backup while epx start takes programmes: the restored copy has every programme acknowledged before it', async t => {
  const dir = await initializedDataDir(t)
  t.equal((await epx(dir, 'company', 'add', 'acme', '--name', 'ACME')).code, 0)
  const bundle = join(dir, 'acme')
  t.equal((await epx(dir, 'cert', 'issue', 'acme', '--out', bundle)).code, 0)
  const token = (await epx(dir, 'token', 'create', '--company', 'acme', '--scope', 'inbound:programme-soutirage')).lines.at(-1)!

  // A published revision: its bytes live in a segment file beside LMDB, and must be copied too.
  t.equal((await epx(dir, 'publish', '--date', '2026-11-24', '--site', 'PRM30000000000001')).code, 0)

  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--cycle', '1'], /epx API listening on (https:\/\/127\.0\.0\.1:\d+\/)/)
  t.teardown(() => { run.child.kill('SIGKILL') })
  const agent = new Agent({
    connect: {
      ca: readFileSync(join(bundle, 'ca.crt')), cert: readFileSync(join(bundle, 'client.crt')), key: readFileSync(join(bundle, 'client.key')), servername: 'localhost',
    },
  }).compose(conformance)
  t.teardown(() => agent.close())
  const url = new URL(INBOUND_PATH, run.match[1]!)

  // A writer that keeps posting (distinct emitted_at: distinct instructions) through the backup.
  const acknowledged: Array<{ id: string; at: number }> = []
  let writing = true
  let n = 0
  // `epx start` runs on the system clock: tomorrow in Paris, emitted_at an hour back and on.
  const targetDate = addDays(parisDateOf(new Date()), 1)
  const from = Date.now() - 3_600_000
  const writer = (async () => {
    while (writing) {
      const emittedAt = new Date(from + 1000 * n++).toISOString()
      const res = await request(url, {
        method: 'POST', dispatcher: agent, body: JSON.stringify(programme({ sites: 3, emittedAt, targetDate })),
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      })
      const body = await res.body.json() as { instructions: Array<{ instruction_id: string }> }
      if (res.statusCode === 202) acknowledged.push({ id: body.instructions[0]!.instruction_id, at: Date.now() })
    }
  })()
  while (acknowledged.length < 5) await new Promise(resolve => setTimeout(resolve, 20))

  const scratch = mkdtempSync(join(tmpdir(), 'epx-backup-'))
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }))
  const backupDir = join(scratch, 'backups', 'monday')
  const startedAt = Date.now()
  const backup = await epx(dir, 'store', 'backup', backupDir)
  t.equal(backup.code, 0, backup.err)
  t.match(backup.out, /store backed up to .*monday \(\d+ revision file\(s\)\); to restore: stop epx/)
  const later = acknowledged.length
  while (acknowledged.length < later + 3) await new Promise(resolve => setTimeout(resolve, 20))
  writing = false
  await writer
  const before = acknowledged.filter(a => a.at < startedAt).map(a => a.id)
  t.ok(before.length >= 5, `${before.length} programmes acknowledged before the backup`)
  t.same(readdirSync(join(backupDir, '..')), ['monday'], 'no half-written folder left beside it')

  // Restore into a fresh data folder (same configuration): the backup is its store folder.
  const fresh = join(scratch, 'restored')
  mkdirSync(fresh)
  cpSync(join(dir, 'epx.config.json'), join(fresh, 'epx.config.json'))
  cpSync(backupDir, join(fresh, 'epx.lmdb'), { recursive: true })
  const listed = await epx(fresh, 'company', 'list')
  t.equal(listed.code, 0, listed.err)
  t.match(listed.out, /acme/, 'the CLI opens the restored store')
  const store = openStore(join(fresh, 'epx.lmdb'))
  t.teardown(() => store.close())
  const ids = new Set(openInstructions(store).list().map(i => i.instructionId))
  t.same(before.filter(id => !ids.has(id)), [], 'every programme acknowledged before the backup is in the restored store')
  const revisions = openRevisions(store, { retentionDays: 90 })
  t.teardown(() => revisions.close())
  const latest = revisions.latest('PRM30000000000001', '2026-11-24')
  t.ok(latest, 'the published revision is in the restored store')
  t.match(JSON.parse(revisions.bytesOf(latest!)!.toString('utf8')), { target_date: '2026-11-24' }, 'with its bytes')

  const again = await epx(dir, 'store', 'backup', backupDir)
  t.equal(again.code, 1)
  t.match(again.err, /^epx: \S+monday already exists: a backup is never overwritten; give a new folder, or remove that one first \(rm -r /)
  t.ok(existsSync(join(backupDir, 'data.mdb')), 'the first backup is untouched')
})

t.test('epx store backup --help and epx --help say how to restore', async t => {
  const dir = await initializedDataDir(t)
  const help = await epx(dir, 'store', 'backup', '--help')
  t.match(help.out, /To restore: stop epx, move the store folder \(<data>\/epx\.lmdb\) aside, copy DIR in its\s+place, start epx/)
  const main = await epx(dir, '--help')
  t.match(main.out, /`epx store backup DIR` copies the store while epx runs\. To restore: stop epx,\n\s*move <data>\/epx\.lmdb aside/)
})
