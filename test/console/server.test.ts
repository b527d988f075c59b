import t from 'tap'
import { connect } from 'node:net'
import { Agent, request } from 'undici'
import { addUser } from '../../src/auth/accounts.ts'
import { createEpx } from '../../src/plugin.ts'
import { openAudit, type AuditRecord } from '../../src/store/audit.ts'
import { testPki } from '../helpers/certs.ts'
import { startEpx, TEST_DOOR_IN_WORKER } from '../helpers/epx.ts'

// The console over plain HTTP requests (undici): headers, redirects, error pages, form
// checks. What needs a browser (cookies as a browser keeps them, axe, the real forms)
// is in login.test.ts and pages.test.ts.
const epx = await startEpx(t, { config: { console: { enabled: true } } })
const url = epx.handle.consoleUrl!
// The reference host's sites, not "all": one BSP per site leaves others free for the companies made below.
await epx.addCompany('acme', { perimeter: epx.ref.sites.map(s => s.site_id) })
const admin = await addUser(epx.store, { username: 'root', admin: true, companyId: null }, Date.now())
const member = await addUser(epx.store, { username: 'alice', admin: false, companyId: 'acme' }, Date.now())
const agent = new Agent({ connect: { ca: testPki().serverCa.certPem } })
t.teardown(() => agent.close())

interface Answer { status: number; headers: Record<string, string>; text: string }

async function call (path: string, opts: { cookie?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = {
    ...(opts.cookie ? { cookie: opts.cookie } : {}),
    ...(opts.form ? { 'content-type': 'application/x-www-form-urlencoded', origin: url.origin } : {}),
    ...opts.headers,
  }
  for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k]   // '' = do not send it
  const r = await request(new URL(path, url), {
    dispatcher: agent,
    method: opts.form ? 'POST' : 'GET',
    headers,
    body: opts.form ? new URLSearchParams(opts.form).toString() : undefined,
  })
  return { status: r.statusCode, headers: r.headers as Record<string, string>, text: await r.body.text() }
}

async function session (username: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const r = await call('/login', { form: { username, password } })
  const cookie = String(r.headers['set-cookie']).split(';')[0]!
  const page = await call('/tokens', { cookie })
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!
  return { cookie, csrf }
}

const root = await session('root', admin.password)
const alice = await session('alice', member.password)

t.test('every answer carries the security headers; pages are no-store, assets cacheable', async t => {
  for (const [path, cookie] of [['/login', undefined], ['/tokens', alice.cookie], ['/nowhere', alice.cookie]] as const) {
    const r = await call(path, { cookie })
    t.equal(r.headers['content-security-policy'],
      "default-src 'none';script-src 'self';style-src 'self';img-src 'self' data:;connect-src 'self';form-action 'self';frame-ancestors 'none';base-uri 'none'", path)
    t.equal(r.headers['x-content-type-options'], 'nosniff')
    t.equal(r.headers['referrer-policy'], 'same-origin')
    t.equal(r.headers['x-frame-options'], 'DENY')
    t.equal(r.headers['cache-control'], 'no-store')
    t.notOk(r.text.includes('<script>') || /\sstyle=|\son\w+=/.test(r.text), 'no inline script, style or handler')
  }
  const css = await call('/assets/console.css')
  t.equal(css.status, 200)
  t.match(css.headers['cache-control'], /max-age=3600/)
  t.equal(css.headers['set-cookie'], undefined)
  const outside = await call('/assets/%2e%2e/%2e%2e/%2e%2e/package.json', { cookie: alice.cookie })
  t.equal(outside.status, 404, 'nothing outside the assets folder')
  t.notMatch(outside.text, 'epx-gateway')
})

t.test('redirects: logged out to the login form (with where to go back), never to another site', async t => {
  t.match(await call('/'), { status: 303, headers: { location: '/login?next=%2F' } })
  // Home is "Besoins agrégés" once that page is registered, else the tokens page.
  t.match(await call('/', { cookie: alice.cookie }), { status: 303, headers: { location: /^\/(besoins-agreges|tokens)$/ } })
  t.match(await call('/login', { cookie: alice.cookie }), { status: 303, headers: { location: '/' } }, 'already logged in')
  for (const next of ['//evil.example/x', 'https://evil.example/', '/\\evil.example']) {
    const r = await call('/login', { form: { username: 'alice', password: member.password, next } })
    t.match(r, { status: 303, headers: { location: '/' } }, `next=${next}`)
  }
  const back = await call('/login', { form: { username: 'alice', password: member.password, next: '/tokens?company=x' } })
  t.equal(back.headers.location, '/tokens?company=x')
  const form = await call('/login?next=%2Fadmin%2Fusers')
  t.match(form.text, 'name="next" value="/admin/users"')
})

t.test('a state-changing request with neither Origin nor Sec-Fetch-Site is refused', async t => {
  const r = await call('/tokens', { cookie: alice.cookie, form: { _csrf: alice.csrf, scope: 'outbound:besoins-agreges' }, headers: { origin: '' } })
  t.equal(r.status, 403)
  const sameOrigin = await call('/logout', { cookie: (await session('alice', member.password)).cookie, form: {}, headers: { origin: '', 'sec-fetch-site': 'same-origin' } })
  t.equal(sameOrigin.status, 403, 'Sec-Fetch-Site alone passes the origin check, then the missing CSRF token is refused')
  t.match(sameOrigin.text, 'Le formulaire a expiré')
})

t.test('the tokens form says what to fix; nothing is created', async t => {
  const before = epx.tokens.list().length
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{}, /Cochez au moins une portée\./],
    [{ scope: 'admin:everything' }, /Portée inconnue\./],
    [{ scope: 'outbound:besoins-agreges', expires: '3 weeks' }, /Expiration invalide\./],
  ]
  for (const [form, message] of cases) {
    const r = await call('/tokens', { cookie: alice.cookie, form: { _csrf: alice.csrf, ...form } })
    t.equal(r.status, 400, JSON.stringify(form))
    t.match(r.text, message)
  }
  const wrong = await call('/tokens', { cookie: root.cookie, form: { _csrf: root.csrf, company: 'nope', scope: 'outbound:besoins-agreges' } })
  t.match(wrong, { status: 400, text: /Choisissez une entreprise existante\./ })
  t.equal(epx.tokens.list().length, before)

  const posted = await call('/tokens', { cookie: root.cookie, form: { _csrf: root.csrf, company: 'acme', scope: 'inbound:programme-soutirage', expires: 'never', label: '  collecte   de nuit ' } })
  t.match(posted, { status: 303, headers: { location: /^\/tokens\/created\/tok_[0-9a-f]{16}$/ } }, 'post/redirect/get: the POST answers a redirect, no secret in the URL')
  const count = epx.tokens.list().length
  const made = await call(posted.headers.location!, { cookie: root.cookie })
  t.equal(made.status, 200)
  t.match(made.text, /--data-binary @programme\.json/, 'an inbound token gets the POST curl line')
  t.match(made.text, /value="epx_[A-Za-z0-9_-]{43}"/, 'the secret, the first time')
  const again = await call(posted.headers.location!, { cookie: root.cookie })
  t.equal(again.status, 200, 'a reload')
  t.notMatch(again.text, /epx_[A-Za-z0-9_-]{43}/, 'shows no secret')
  t.match(again.text, /a déjà été affiché et ne le sera plus : aucun autre jeton n'a été créé/)
  t.equal(epx.tokens.list().length, count, 'and makes no second token')
  const other = await call(posted.headers.location!, { cookie: alice.cookie })
  t.notMatch(other.text, /epx_[A-Za-z0-9_-]{43}/, "the secret waited in its creator's session only")
  t.equal((await call('/tokens/created/tok_0000000000000000', { cookie: root.cookie })).status, 404, 'a token that does not exist')
  const filtered = await call('/tokens?company=acme', { cookie: root.cookie })
  t.match(filtered.text, '<option value="acme" selected>acme</option>', 'an admin filters the list by company')
  const record = epx.tokens.list('acme').find(r => r.label !== undefined)
  t.match(record, { scopes: ['inbound:programme-soutirage'], expiresAt: undefined, label: 'collecte de nuit', createdBy: 'root' })
  t.match(filtered.text, /<td>collecte de nuit<\/td>/, 'the list shows its label')
  t.match(filtered.text, /par root/, 'and who made it')
})

t.test('the admin users form: role required, a taken name refused, no action on oneself; a reset shows a new password', async t => {
  t.match(await call('/admin/users', { cookie: root.cookie, form: { _csrf: root.csrf, username: 'x1' } }), { status: 400, text: /Choisissez un rôle\./ })
  t.match(await call('/admin/users', { cookie: root.cookie, form: { _csrf: root.csrf, username: 'alice', role: 'admin' } }), { status: 409, text: /L&#39;utilisateur alice existe déjà : choisissez un autre identifiant\./ })
  t.match(await call('/admin/users', { cookie: root.cookie, form: { _csrf: root.csrf, username: 'a b', role: 'admin' } }), { status: 400, text: /Identifiant « a b » invalide : de 2 à 64 lettres minuscules/ })
  t.match(await call('/admin/users', { cookie: root.cookie, form: { _csrf: root.csrf, username: 'newbie', role: 'company:nope' } }), { status: 400, text: /L&#39;entreprise nope n&#39;existe pas\./ })
  const confirm = await call('/admin/users/alice/reset-password', { cookie: root.cookie })
  t.match(confirm, { status: 200, text: /Générer un nouveau mot de passe pour <strong>alice<\/strong>/ }, 'a reset asks first')
  t.equal((await call('/tokens', { cookie: alice.cookie })).status, 200, 'asking changed nothing')
  t.equal((await call('/admin/users/root/disable', { cookie: root.cookie, form: { _csrf: root.csrf } })).status, 404, 'an admin does not disable itself here')
  const posted = await call('/admin/users/alice/reset-password', { cookie: root.cookie, form: { _csrf: root.csrf } })
  t.match(posted, { status: 303, headers: { location: '/admin/users' } })
  const reset = await call('/admin/users', { cookie: root.cookie })
  const password = /id="new-password" class="secret" readonly value="([^"]+)"/.exec(reset.text)?.[1]
  t.ok(password)
  t.equal((await call('/tokens', { cookie: alice.cookie })).status, 303, "alice's session ended with the reset")
  t.notMatch((await call('/admin/users', { cookie: root.cookie })).text, /new-password/, 'a reload shows it no more')
  const relogged = await call('/login', { form: { username: 'alice', password: password! } })
  t.equal(relogged.status, 303, 'the new password works')
  const cookie = String(relogged.headers['set-cookie']).split(';')[0]!
  t.match(await call('/tokens', { cookie }), { status: 303, headers: { location: '/compte/mot-de-passe' } }, 'but alice must choose her own first')
  t.match(await call('/admin/users/alice/enable', { cookie: root.cookie, form: { _csrf: root.csrf } }), { status: 303, headers: { location: '/admin/users' } })
  t.match(await call('/admin/users', { cookie: root.cookie }), { status: 200, text: /alice est réactivé/ })
})

t.test('admin companies and publish: bad input answers 400 with the reason; unknown company 404', async t => {
  t.match(await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'acme', name: 'Again' } }), { status: 409, text: /existe déjà/ })
  t.match(await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'Bad Id', name: 'x' } }), { status: 400, text: /Identifiant « Bad Id » invalide : de 2 à 63 caractères/ })
  t.match(await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'bad-sites', name: 'x', sites: 'PRM1, PRM2' } }), { status: 400, text: /Périmètre invalide : « PRM1 », « PRM2 » ne sont pas des identifiants de site/ })
  t.match(await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'bad-mix', name: 'x', sites: 'all PRM12345678901234' } }), { status: 400, text: /Périmètre invalide : « all » \(tous les sites\) ou une liste/ })
  const unmanaged = await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'far-away', name: 'Far', sites: 'PRM99999999999999' } })
  t.match(unmanaged, { status: 303, headers: { location: '/admin/companies/far-away?unmanaged=1' } })
  t.match(await call(unmanaged.headers.location!, { cookie: root.cookie }), { status: 200, text: /Attention : le solveur ne gère pas le site PRM99999999999999/ }, 'a site the solver does not manage is warned about')
  const ask = await call('/admin/companies/far-away/status', { cookie: root.cookie, form: { _csrf: root.csrf, status: 'suspended' } })
  t.match(ask, { status: 200, text: /Confirmer la suspension/ }, 'suspending asks first')
  t.equal(epx.companies.get('far-away')?.status, 'active', 'asking changed nothing')
  await call('/admin/companies/far-away/status', { cookie: root.cookie, form: { _csrf: root.csrf, status: 'suspended', confirmed: 'yes' } })
  t.equal(epx.companies.get('far-away')?.status, 'suspended', 'confirmed: suspended')
  t.match(await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'noname' } }), { status: 400, text: /Le nom est obligatoire/ })
  t.match(await call('/admin/companies', { cookie: root.cookie, form: { _csrf: root.csrf, id: 'bad-subject', name: 'x', certSubject: 'XX=1' } }), { status: 400, text: /Sujet de certificat invalide/ })
  t.match(await call('/admin/companies/acme/status', { cookie: root.cookie, form: { _csrf: root.csrf, status: 'gone' } }), { status: 400, text: /État inconnu/ })
  t.match(await call('/admin/companies/acme/subject', { cookie: root.cookie, form: { _csrf: root.csrf, certSubject: 'XX=1' } }), { status: 400 })
  for (const p of ['/admin/companies/nope', '/admin/companies/nope/status', '/admin/companies/nope/subject', '/admin/companies/nope/perimeter']) {
    const r = p.endsWith('nope') ? await call(p, { cookie: root.cookie }) : await call(p, { cookie: root.cookie, form: { _csrf: root.csrf } })
    t.equal(r.status, 404, p)
  }
  t.match(await call('/admin/publish', { cookie: root.cookie, form: { _csrf: root.csrf, date: '2026-13-01' } }), { status: 400, text: /Date invalide/ })
  const past = await call('/admin/publish', { cookie: root.cookie, form: { _csrf: root.csrf, date: '2026-11-01' } })
  t.match(past, { status: 200, text: /Le 01\/11\/2026 est déjà passé/ }, 'a day already over asks first')
  t.notMatch(past.text, /sites? publiés?/, 'and publishes nothing yet')
  const posted = await call('/admin/publish', { cookie: root.cookie, form: { _csrf: root.csrf, date: '2026-11-22' } })
  t.match(posted, { status: 303, headers: { location: '/admin/publish' } }, 'post/redirect/get: a reload of the report publishes nothing again')
  const done = await call('/admin/publish', { cookie: root.cookie })
  t.match(done.text, /3 sites publiés pour le 22\/11\/2026 ; aucun en échec\./)
  t.notMatch((await call('/admin/publish', { cookie: root.cookie })).text, /sites? publiés?/, 'the report is shown once')
  // The audit record lands within its batching delay (store/audit.ts).
  let run: AuditRecord | undefined
  for (let i = 0; i < 100 && !run; i++) {
    run = openAudit(epx.store).list({ action: 'publication.run' }).find(r => r.subject === '2026-11-22' || JSON.stringify(r).includes('2026-11-22'))
    if (!run) await new Promise(resolve => setTimeout(resolve, 20))
  }
  t.same(run?.actor, { kind: 'console', user: 'root' }, '"Publier maintenant" is audited as the admin who clicked it')
})

t.test("a suspension made elsewhere (epx company suspend, another process) ends the members' sessions at their next request", async t => {
  await epx.addCompany('gamma')
  const g = await addUser(epx.store, { username: 'gina', admin: false, companyId: 'gamma' }, Date.now())
  const gina = await session('gina', g.password)
  t.equal((await call('/tokens', { cookie: gina.cookie })).status, 200)
  await epx.companies.update('gamma', c => ({ ...c, status: 'suspended' }))   // what the CLI does: the store only
  t.match(await call('/tokens', { cookie: gina.cookie }), { status: 303, headers: { location: '/login?next=%2Ftokens' } })
  await epx.companies.update('gamma', c => ({ ...c, status: 'active' }))
  t.equal((await call('/tokens', { cookie: gina.cookie })).status, 303, 'resuming does not bring the ended session back')
})

t.test('a store that cannot answer gives a 503 page with Retry-After, never a 401 nor a login form', async t => {
  epx.faults.unavailable = true
  try {
    const r = await call('/tokens', { cookie: root.cookie })
    t.equal(r.status, 503)
    t.equal(r.headers['retry-after'], '5')
    t.match(r.text, 'Service momentanément indisponible')
  } finally {
    epx.faults.unavailable = false
  }
})

t.test('no password, session id, CSRF token or token secret reaches the logs', async t => {
  await call('/login', { form: { username: 'root', password: 'a wrong password for the log check' } })
  const posted = await call('/tokens', { cookie: root.cookie, form: { _csrf: root.csrf, company: 'acme', scope: 'outbound:besoins-agreges' } })
  const made = await call(posted.headers.location!, { cookie: root.cookie })
  const secret = /value="(epx_[^"]+)"/.exec(made.text)![1]!
  const logs = JSON.stringify(epx.logs())
  t.match(logs, 'console login refused', 'the refusal is logged')
  t.match(logs, 'console: token created', 'and the creation')
  for (const s of [admin.password, member.password, 'a wrong password for the log check', root.cookie.split('=')[1]!, root.csrf, secret]) {
    t.notOk(logs.includes(s), 'a secret is absent from the logs')
  }
})

t.test('a connection that never completes its TLS handshake is closed (api.handshakeTimeoutMs applies to the console too)', async t => {
  const slow = await startEpx(t, { config: { console: { enabled: true }, api: { handshakeTimeoutMs: 300 } } })
  const socket = connect(Number(slow.handle.consoleUrl!.port), '127.0.0.1')
  const closed = await new Promise<boolean>(resolve => {
    const limit = setTimeout(() => resolve(false), 20_000)   // a bound for a loaded machine, not a timing
    socket.on('close', () => { clearTimeout(limit); resolve(true) })
    socket.on('error', () => {})
  })
  socket.destroy()
  t.ok(closed, 'closed by the server')
})

t.test('the console is off unless enabled; a port in use fails the activation and leaves nothing open', async t => {
  const off = await startEpx(t)
  t.equal(off.handle.consoleUrl, undefined)
  await t.rejects(createEpx(off.ref.host, {
    api: { host: '127.0.0.1', port: 0, inWorker: TEST_DOOR_IN_WORKER }, publish: { schedule: false }, store: { path: 'second.lmdb' },
    console: { enabled: true, host: '127.0.0.1', port: Number(url.port) },
  }), { code: 'EPX_LISTEN_FAILED', message: new RegExp(`cannot listen on 127\\.0\\.0\\.1:${url.port}`) })
})
