import t from 'tap'
import { epx, initializedDataDir } from '../helpers/cli.ts'

const DAY = '2026-11-22'
const SITE = 'PRM30000000000001'

t.test('epx publish --date publishes every site of the configured host, and revisions list shows them', async t => {
  const dir = await initializedDataDir(t)
  const r = await epx(dir, 'publish', '--date', DAY)
  t.equal(r.code, 0, r.err)
  t.match(r.lines.at(-1), /^published 5 site\(s\) for 2026-11-22; 0 failed$/)
  t.match(r.lines[0], /^SITE_ID\s+EMITTED_AT\s+ETAG$/)
  const list = await epx(dir, 'revisions', 'list', '--site', SITE, '--date', DAY, '--json')
  t.equal(list.code, 0, list.err)
  const rows = JSON.parse(list.out)
  t.equal(rows.length, 1)
  t.match(rows[0], { siteId: SITE, targetDate: DAY, latest: true, etag: /^W\/"/ })
})

t.test('epx publish --site republishes only that site: a new revision, the latest', async t => {
  const dir = await initializedDataDir(t)
  await epx(dir, 'publish', '--date', DAY)
  const r = await epx(dir, 'publish', '--date', DAY, '--site', SITE, '--json')
  t.equal(r.code, 0, r.err)
  const report = JSON.parse(r.out)
  t.same(report.published.map((p: { siteId: string }) => p.siteId), [SITE])
  const list = await epx(dir, 'revisions', 'list', '--site', SITE, '--date', DAY)
  t.equal(list.lines.length, 3, 'header and two revisions')
  t.match(list.lines[2], /yes$/, 'the last one is the latest')
  const other = JSON.parse((await epx(dir, 'revisions', 'list', '--site', 'PRM30000000000002', '--date', DAY, '--json')).out)
  t.equal(other.length, 1, 'other sites untouched')
})

t.test('epx publish reports a site the solver does not manage and exits 1', async t => {
  const dir = await initializedDataDir(t)
  const r = await epx(dir, 'publish', '--date', DAY, '--site', 'PRM99999999999999')
  t.equal(r.code, 1)
  t.match(r.err, /site PRM99999999999999 not published for 2026-11-22: not a site the solver manages/)
})

t.test('epx publish and revisions list refuse bad arguments with usage errors (exit 2)', async t => {
  const dir = await initializedDataDir(t)
  for (const [argv, why] of [
    [['publish'], /missing --date/],
    [['publish', '--date', '2026-02-30'], /--date 2026-02-30 is not a calendar date YYYY-MM-DD/],
    [['publish', '--date', DAY, '--site', `${SITE},PRM1`], /--site PRM1 is not a site id: PRM followed by 14 digits/],
    [['revisions', 'list', '--date', DAY], /missing --site/],
    [['revisions', 'list', '--site', SITE, '--date', 'tomorrow'], /--date tomorrow is not a calendar date/],
  ] as const) {
    const r = await epx(dir, ...argv)
    t.equal(r.code, 2, argv.join(' '))
    t.match(r.err, why)
    t.match(r.err, /usage: epx (publish|revisions list)/)
  }
})

t.test('epx revisions list says so when nothing is published', async t => {
  const dir = await initializedDataDir(t)
  const r = await epx(dir, 'revisions', 'list', '--site', SITE, '--date', DAY)
  t.equal(r.code, 0)
  t.equal(r.out, `no revision of ${SITE} for ${DAY}`)
  t.equal((await epx(dir, 'revisions', 'list', '--site', SITE, '--date', DAY, '--json')).out, '[]')
})
