import t from 'tap'
import { startEpx } from '../helpers/epx.ts'
import { OUTBOUND_PATH } from '../../src/contract/paths.ts'
import { catalogue, type ErrorSpec } from '../../src/errors.ts'
import { errorPage, problemSlugs } from '../../src/http/error-pages.ts'

// A problem's `type` is `{base_url}/errors/<slug>` (DECISIONS.md "Outbound"), and that URL
// answers a page a person reads (RFC 9457 §3.1.1), made from the error catalogue.

t.test('a problem\'s type is under the configured public base URL, and its path answers the page, without credentials', async t => {
  const epx = await startEpx(t, { config: { api: { publicBaseUrl: 'https://epx.example.com/gateway/' } } })
  const problem = await epx.request({ path: OUTBOUND_PATH, query: { site_id: 'PRM30000000000001', target_date: '2026-11-22' } })
  t.equal(problem.status, 403)
  t.equal(problem.json().type, 'https://epx.example.com/gateway/errors/mtls-required', 'the base URL, its trailing slash dropped')
  // The proxy at the public base URL hands the door the path below it.
  const page = await epx.request({ path: new URL(problem.json().type).pathname.replace('/gateway', '') })
  t.equal(page.status, 200, page.text)
  t.equal(page.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(page.headers['x-content-type-options'], 'nosniff')
  t.match(page.headers['content-security-policy'], /default-src 'none'/)
  t.equal(page.headers['ratelimit-policy'], undefined, 'nobody\'s budget')
  t.match(page.text, /<h1>403 Forbidden: <code>mtls-required<\/code><\/h1>/)
  t.match(page.text, /<p lang="en">no client certificate, one the service&#39;s CA did not issue/)
  t.match(page.text, /<p lang="fr">pas de certificat client/)
})

t.test('every slug of the catalogue has its page, each code that carries it in both languages', async t => {
  const epx = await startEpx(t)
  for (const [slug, codes] of problemSlugs()) {
    const page = await epx.request({ path: `/errors/${slug}` })
    t.equal(page.status, 200, slug)
    t.equal(page.text, errorPage(slug, codes))
    for (const code of codes) {
      const { status, help } = catalogue[code] as ErrorSpec
      t.match(page.text, `<h2><code>${code}</code>`, `${slug}: ${code}`)
      t.match(page.text, `HTTP ${status}</h2>`)
      t.ok(help?.en && help.fr, `${code} has its help in English and in French`)
    }
  }
  t.same(problemSlugs().get('not-found'), ['NOT_PUBLISHED', 'NOTHING_TO_COMPARE'], 'a slug two codes share: one page, both codes')
  const store = await epx.request({ path: '/errors/no-store' })
  t.match(store.text, '<code>NO_STORE</code> (<code>STORE_UNAVAILABLE</code> in a problem)', 'the outbound door\'s name for it')

  const head = await epx.request({ method: 'HEAD', path: '/errors/rate-limited' })
  t.equal(head.status, 200)
  t.equal(head.text, '')
  t.equal(head.headers['content-length'], String(Buffer.byteLength(errorPage('rate-limited', ['RATE_LIMITED']))))
})

t.test('the default base URL is the listener\'s own, and its type URLs answer as they are', async t => {
  const epx = await startEpx(t)
  const problem = await epx.request({ path: OUTBOUND_PATH, cert: null })
  const type = problem.json().type as string
  t.equal(type, `${epx.url.origin}/errors/mtls-required`)
  const page = await epx.request({ path: new URL(type).pathname })
  t.equal(page.status, 200)
})

t.test('an unknown slug is an unknown path; another method is a 405', async t => {
  const epx = await startEpx(t)
  for (const path of ['/errors/nope', '/errors/', '/errors', '/errors/rate-limited/x', '/errors/RATE-LIMITED']) {
    const res = await epx.request({ path })
    t.equal(res.status, 404, path)
    t.equal(res.headers['content-type'], 'application/problem+json')
    t.equal(res.json().code, 'UNKNOWN_PATH')
    t.equal(res.headers['retry-after'], undefined)
  }
  const posted = await epx.request({ method: 'POST', path: '/errors/rate-limited', body: 'x' })
  t.equal(posted.status, 405)
  t.equal(posted.headers.allow, 'GET, HEAD')
  t.equal(posted.json().code, 'METHOD_NOT_ALLOWED')
})

t.test('a page escapes what it shows', async t => {
  t.notMatch(errorPage('unauthorized', ['UNAUTHORIZED']), /error="invalid_token"/, 'quotes escaped')
  t.match(errorPage('unauthorized', ['UNAUTHORIZED']), '<code>error=&#34;invalid_token&#34;</code>', 'a `backquoted` word as code')
})
