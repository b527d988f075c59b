import t from 'tap'
import { createProgrammeReader } from '../../src/apply/read-programme.ts'
import type { CheckContext } from '../../src/apply/check-programme.ts'
import { programme, siteId } from '../helpers/programme.ts'

// Big bodies are parsed in a worker thread (no event-loop stall, bench/README.md "Targets"); the answer
// must not depend on where the parsing ran.

const ctx: CheckContext = {
  perimeter: [siteId(1), siteId(2), siteId(3)],
  provenance: { receivedAt: '2026-11-21T12:30:00.000Z', companyId: 'acme', tokenId: 'tok', certFingerprint256: 'AB' },
}
const inline = createProgrammeReader({ maxSites: 100, requireContiguous: false, offThreadBytes: Infinity })
const worker = createProgrammeReader({ maxSites: 100, requireContiguous: false, offThreadBytes: 0 })
t.teardown(() => Promise.all([inline.close(), worker.close()]))

const plain = (b: object) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, ArrayBuffer.isView(v) ? Array.from(v as Uint8Array) : v]))

t.test('a valid programme gives the same batch in the worker as inline', async t => {
  const body = Buffer.from(JSON.stringify(programme({ sites: 3, kwh: (j, i) => j * i })))
  const a = await inline.read(Buffer.from(body), ctx)
  const b = await worker.read(Buffer.from(body), ctx)
  t.same(plain(b), plain(a))
  t.equal(b.siteIds.length, 3)
})

t.test('from the sources with no current build (EPX_BUILT_WORKERS unset), the worker runs the TypeScript through tsx, with the same answer', async t => {
  const built = process.env.EPX_BUILT_WORKERS
  delete process.env.EPX_BUILT_WORKERS
  t.teardown(() => { if (built !== undefined) process.env.EPX_BUILT_WORKERS = built })
  const sources = createProgrammeReader({ maxSites: 100, requireContiguous: false, offThreadBytes: 0 })
  t.teardown(() => sources.close())
  const body = Buffer.from(JSON.stringify(programme({ sites: 2, kwh: (j, i) => j + i })))
  t.same(plain(await sources.read(Buffer.from(body), ctx)), plain(await inline.read(Buffer.from(body), ctx)))
})

t.test('violations found in the worker are the same 400, with the same pointers', async t => {
  const bad = programme({ sites: 4, slots: 2 })
  bad.sites[0]!.energie_programmee[1]!.energie_kwh = -1
  const text = JSON.stringify(bad)
  const a = await inline.read(Buffer.from(text), ctx).catch(e => e)
  const b = await worker.read(Buffer.from(text), ctx).catch(e => e)
  t.equal(b.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
  t.equal(b.status, 400)
  t.same(b.details, a.details)
  t.same(Object.keys(b.details), ['/sites/0/energie_programmee/1/energie_kwh', '/sites/3/site_id'])
  const broken = await worker.read(Buffer.from('{"sites": [1,'), ctx).catch(e => e)
  t.match(broken.details[''], /not valid JSON at line 1, column 14/)
})

t.test('concurrent reads in the worker each get their own answer', async t => {
  const bodies = [1, 2, 3].map(n => Buffer.from(JSON.stringify(programme({ sites: n, slots: 4 }))))
  const batches = await Promise.all(bodies.map(b => worker.read(b, ctx)))
  t.same(batches.map(b => b.siteIds.length), [1, 2, 3])
})

t.test('a body that shares its memory with other data is copied, not transferred', async t => {
  const text = JSON.stringify(programme({ slots: 1 }))
  const pool = Buffer.alloc(text.length + 10)
  pool.write(text, 5)
  const batch = await worker.read(pool.subarray(5, 5 + text.length), ctx)
  t.equal(batch.siteIds[0], siteId(1))
  t.equal(pool.length, text.length + 10, 'the sender still holds its buffer')
})
