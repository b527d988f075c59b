import t from 'tap'
import { request } from 'undici'
import { startEpx } from '../helpers/epx.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'

// docs/operating.md "Programme against delivery": today's shortfall and broken curtailments
// as gauges, from the meter values the host reports, and the figure the alert recipe reads
// (the most quarter-hours under their floor of one site today).

function samples (text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : undefined
}
const scrape = async (url: URL) => (await request(new URL('/metrics', url))).body.text()
const iso = (ms: number) => new Date(ms).toISOString()

t.test('today\'s shortfall, broken curtailments and the worst site\'s short slots', async t => {
  const epx = await startEpx(t, { sites: 3, config: { metrics: { enabled: true, port: 0 } } })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage'])
  // Floors of 4 kWh for four slots, then a curtailment, on sites 1 and 2.
  const body = programme({ sites: 2, slots: 5, kwh: j => j < 4 ? 4 : 0 })
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body })).status, 202)
  const start = Date.parse('2026-11-21T23:00:00Z')
  epx.clock.set('2026-11-22T06:00:00Z')
  const at = (site: number, slot: number, kwh: number) => ({ siteId: siteId(site), startUtc: iso(start + slot * 900_000), endUtc: iso(start + (slot + 1) * 900_000), kwh })
  const url = epx.handle.metricsUrl!
  t.equal(samples(await scrape(url), 'epx_realisation_today_shortfall_kwh'), 0, 'nothing metered: nothing short')
  await epx.handle.reportMetering([
    at(1, 0, 3), at(1, 1, 2.5), at(1, 2, 1), at(1, 3, 4), at(1, 4, 0),
    at(2, 0, 4), at(2, 1, 3.5), at(2, 4, 2),
  ])
  let page = await scrape(url)
  t.equal(samples(page, 'epx_realisation_today_shortfall_kwh'), 1 + 1.5 + 3 + 0.5)
  t.equal(samples(page, 'epx_realisation_today_curtailments_broken'), 1)
  t.equal(samples(page, 'epx_realisation_today_sites_short'), 2)
  t.equal(samples(page, 'epx_realisation_today_short_slots_max'), 3)
  // A late correction: site 1's third slot was met.
  await epx.handle.reportMetering([at(1, 2, 4)])
  page = await scrape(url)
  t.equal(samples(page, 'epx_realisation_today_short_slots_max'), 2)
  t.equal(samples(page, 'epx_realisation_today_shortfall_kwh'), 3)
})
