import t from 'tap'
import pino from 'pino'
import { managedSites } from '../../src/apply/managed-sites.ts'
import { ManualClock } from '../../src/host/reference-host.ts'
import type { Logger } from '../../src/host/contract.ts'

// The solver's sites as the inbound check reads them: in memory, read again when stale,
// the last list kept when the host cannot answer.

function setup (read: () => Promise<Array<{ site_id: string }>>) {
  const clock = new ManualClock('2026-11-21T12:30:00Z')
  const lines: any[] = []
  const log = pino({ level: 'warn' }, { write: (l: string) => { lines.push(JSON.parse(l)) } }) as unknown as Logger
  return { clock, lines, sites: managedSites({ read, clock, log, maxAgeMs: 30_000 }) }
}

t.test('read once, then from memory until stale; a site the host adds is known after the next read', async t => {
  let reads = 0
  let list = [{ site_id: 'PRM00000000000001' }]
  const { clock, sites } = setup(async () => { reads++; return list })
  t.same([...(await sites.current())!], ['PRM00000000000001'])
  t.notOk(sites.current() instanceof Promise, 'fresh: a set, no call to the host')
  t.equal(reads, 1)
  list = [...list, { site_id: 'PRM00000000000002' }]
  clock.advance(30_000)
  t.same([...(await sites.current())!], ['PRM00000000000001', 'PRM00000000000002'])
  t.equal(reads, 2)
})

t.test('a host that cannot answer: no check before any answer, the last list after; one warn line', async t => {
  let fail = true
  const { clock, lines, sites } = setup(async () => { if (fail) throw new Error('solver busy'); return [{ site_id: 'PRM00000000000001' }] })
  t.equal(await sites.current(), undefined, 'never answered: not checked')
  clock.advance(30_000)
  t.equal(await sites.current(), undefined)
  t.equal(lines.length, 1, 'said once')
  t.match(lines[0], { level: 40, msg: /could not read the solver's sites/ })
  fail = false
  clock.advance(30_000)
  t.same([...(await sites.current())!], ['PRM00000000000001'])
  fail = true
  clock.advance(30_000)
  t.same([...(await sites.current())!], ['PRM00000000000001'], 'the last list stays in force')
})
