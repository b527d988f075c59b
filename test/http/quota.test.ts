// DECISIONS.md "Rate limits and quotas", the storage quota: the bytes of programmes a
// company has had accepted in a Paris day. Beyond it, 429 QUOTA_EXCEEDED in the inbound
// format with Retry-After until the next Paris day; the programme that would cross it is
// refused whole. Through the real door (TLS, undici), the test's clock naming the day.
import t from 'tap'
import { request } from 'undici'
import { startEpx } from '../helpers/epx.ts'
import { eventually } from '../helpers/eventually.ts'
import { INBOUND_PATH, programme } from '../helpers/programme.ts'
import { headOnly } from '../helpers/tls-request.ts'
import { openAudit } from '../../src/store/audit.ts'
import { bytesText } from '../../src/apply/quota.ts'

const day = '2026-11-22'
/** Programmes of one size whatever their emitted_at (whole seconds, one minute apart). */
const body = (minute: number) => programme({ targetDate: day, slots: 4, emittedAt: `2026-11-21T12:${String(minute).padStart(2, '0')}:00Z` })
const SIZE = Buffer.byteLength(JSON.stringify(body(0)))
/** Two programmes and a half: the third would cross it. */
const QUOTA = 2 * SIZE + Math.floor(SIZE / 2)

t.test('programmes are accepted up to the quota; the one that would cross it is refused whole until the next Paris day, across a restart', async t => {
  // 12:30 UTC on 21 November: 13:30 in Paris, whose next day starts at 23:00 UTC, 37,800 s later.
  const epx = await startEpx(t, { sites: 1, config: { inbound: { maxBytesPerCompanyPerDay: QUOTA }, metrics: { enabled: true, port: 0 } } })
  const who = async (id: string) => {
    const { cert } = await epx.addCompany(id)
    return { cert, token: (await epx.addToken(id, ['inbound:programme-soutirage'])).secret }
  }
  const acme = await who('acme')
  const beta = await who('beta')
  const post = (minute: number, o: { chunked?: boolean; as?: typeof acme } = {}) =>
    epx.request({ method: 'POST', path: INBOUND_PATH, ...(o.as ?? acme), body: body(minute), ...(o.chunked ? { chunked: true } : {}) })

  t.same([(await post(1)).status, (await post(2)).status], [202, 202], 'two programmes fit')
  // Chunked, its size unknown until read: the save's transaction refuses it.
  const crossing = await post(3, { chunked: true })
  t.equal(crossing.status, 429)
  t.equal(crossing.headers['retry-after'], '37800', 'until 00:00 in Paris')
  t.match(crossing.json(), { error: { code: 'QUOTA_EXCEEDED' } })
  t.equal(crossing.json().error.message, `company acme is over its storage quota of ${bytesText(QUOTA)} a day: ${bytesText(2 * SIZE)} of programmes accepted today ` +
    `(2026-11-21, Europe/Paris), and this programme's ${SIZE} bytes would cross it; the quota resets at 00:00 Paris time (2026-11-21T23:00:00.000Z), retry after 37800 s`)
  const status = await epx.request({ path: INBOUND_PATH, query: { target_date: day }, ...acme })
  t.same(status.json().instructions.map((i: { emitted_at: string }) => i.emitted_at).sort(), ['2026-11-21T12:01:00Z', '2026-11-21T12:02:00Z'], 'nothing of the refused one was written')

  t.equal((await post(4, { as: beta })).status, 202, 'another company counts its own bytes')

  // Its Content-Length alone would cross it: refused with only its head sent.
  const raw = await headOnly(epx.url, acme, SIZE)
  t.match(raw, /^HTTP\/1\.1 429 /, 'answered while the body is still unsent')
  t.match(raw, /\r\nretry-after: 37800\r\n/i)
  t.match(raw, /"code":"QUOTA_EXCEEDED"/)
  const small = await epx.request({ method: 'POST', path: INBOUND_PATH, ...acme, headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(small.status, 400, 'a body that fits what is left is read (and this one is refused for what it is)')

  // Audited once per company and hour, counted each time; today's use is a gauge.
  const audited = await eventually(() => openAudit(epx.store).list({ action: 'company.quota-exceeded' }), l => l.length > 0)
  t.equal(audited.length, 1, 'two refusals in an hour: one record')
  t.match(audited[0], { actor: { kind: 'company', companyId: 'acme' }, subject: 'acme', outcome: 'refused 429 QUOTA_EXCEEDED' })
  t.equal((await eventually(() => openAudit(epx.store).list({ action: 'programme.rejected' }), l => l.length > 0)).length, 1, 'the 400 alone is a rejected programme: a refusal over the quota is not, one by one')
  const text = await eventually(async () => (await request(new URL('/metrics', epx.handle.metricsUrl!))).body.text(),
    s => s.includes('epx_quota_exceeded_total{company="acme"} 2'))
  t.match(text, `epx_quota_bytes{company="acme"} ${2 * SIZE}`)
  t.match(text, `epx_quota_bytes{company="beta"} ${SIZE}`)
  t.match(text, `epx_quota_limit_bytes{company="acme"} ${QUOTA}`)

  await epx.restart()
  epx.clock.advance(1000)
  const again = await post(5)
  t.equal(again.status, 429, 'the day\'s count survives a restart')
  t.equal(again.headers['retry-after'], '37799')

  epx.clock.set('2026-11-21T23:00:00Z')
  t.equal((await post(6)).status, 202, 'a new Paris day, a new count')

  await epx.companies.update('acme', c => ({ ...c, quotaBytesPerDay: SIZE }))
  t.equal((await post(7)).status, 429, 'its own quota, from its next request: one programme a day, spent')
})
