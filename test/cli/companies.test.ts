import t from 'tap'
import { X509Certificate } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { inDataDir } from '../../src/config.ts'
import { issueCert } from '../../src/auth/pki.ts'
import { clientCert, testPki } from '../helpers/certs.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openStore } from '../../src/store/open-store.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'
import { openAudit } from '../../src/store/audit.ts'

const dir = await initializedDataDir(t)

/** The record as the plugin would read it, straight from the store. */
async function stored (id: string): Promise<ReturnType<ReturnType<typeof openCompanies>['get']>>
async function stored (dataDir: string, id: string): Promise<ReturnType<ReturnType<typeof openCompanies>['get']>>
async function stored (a: string, b?: string) {
  const [dataDir, id] = b === undefined ? [dir, a] : [a, b]
  const store = openStore(inDataDir(dataDir, 'epx.lmdb'))
  try { return openCompanies(store).get(id) } finally { await store.close() }
}

t.test('company add stores the company, active, with the default subject CN=<ID>,O=<NAME> and perimeter all', async t => {
  const r = await epx(dir, 'company', 'add', 'acme-bsp', '--name', 'ACME')
  t.equal(r.code, 0, r.err)
  t.match(r.out, /added company acme-bsp \(ACME\)/)
  t.match(await stored('acme-bsp'), { id: 'acme-bsp', name: 'ACME', status: 'active', certSubject: 'CN=acme-bsp,O=ACME', perimeter: 'all' })
})

t.test('one BSP per site: a company whose perimeter would share a site with an active one is refused, naming it; narrowing first makes room', async t => {
  const refused = await epx(dir, 'company', 'add', 'volt', '--name', 'Volt SA', '--sites', 'PRM00000000000001')
  t.equal(refused.code, 1)
  t.match(refused.err, /^epx: the perimeter of company volt would share every site \(the perimeter of acme-bsp is "all sites"\) with active company acme-bsp's: one BSP per site.*Narrow acme-bsp's perimeter first \(epx company perimeter acme-bsp --sites PRM,\.\.\.\)/)
  t.equal(await stored('volt'), undefined, 'not stored')
  const narrowed = await epx(dir, 'company', 'perimeter', 'acme-bsp', '--sites', 'PRM00000000000009')
  t.equal(narrowed.code, 0, narrowed.err)
  t.equal(narrowed.out, 'company acme-bsp: perimeter 1 site(s): PRM00000000000009')
  t.same((await stored('acme-bsp'))?.perimeter, ['PRM00000000000009'])
  t.equal((await epx(dir, 'company', 'perimeter', 'acme-bsp')).code, 2, 'no --sites: a usage error')
})

t.test('company add canonicalizes --cert-subject and takes PRM lists, comma-separated or repeated', async t => {
  const r = await epx(dir, 'company', 'add', 'volt', '--name', 'Volt SA', '--cert-subject', 'O=Volt, CN=volt-prod',
    '--sites', 'PRM00000000000001,PRM00000000000002', '--sites', 'PRM00000000000002')
  t.equal(r.code, 0, r.err)
  t.match(await stored('volt'), { certSubject: 'CN=volt-prod,O=Volt', perimeter: ['PRM00000000000001', 'PRM00000000000002'] })
})

t.test('company add refuses bad input with exit 2 and a message naming what to fix', async t => {
  const cases: Array<[string[], RegExp]> = [
    [['company', 'add', 'ACME!', '--name', 'x'], /invalid company id 'ACME!': use 2 to 63 lowercase letters/],
    [['company', 'add', 'bad1', '--name', 'x', '--sites', 'PRM123,PRM00000000000001'], /invalid site id\(s\) 'PRM123': a site id is PRM followed by 14 digits/],
    [['company', 'add', 'bad2', '--name', 'x', '--sites', 'all,PRM00000000000001'], /either "all" or a list of PRM ids, not both/],
    [['company', 'add', 'bad3'], /missing --name NAME/],
    [['company', 'add', 'bad4', '--name', '  '], /--name must not be blank/],
    [['company', 'add', '--name', 'x'], /missing ID/],
    [['company', 'add', 'bad5', 'extra', '--name', 'x'], /unexpected argument 'extra'/],
    [['company', 'add', 'bad6', '--name', 'x', '--cert-subject', 'XX=1'], /invalid --cert-subject: bad subject part 'XX=1'/],
  ]
  for (const [argv, message] of cases) {
    const r = await epx(dir, ...argv)
    t.equal(r.code, 2, `${argv.join(' ')} exits 2`)
    t.match(r.err, message)
    t.match(r.err, /\nusage: epx company add ID --name NAME/)
  }
  for (const id of ['bad1', 'bad2', 'bad3', 'bad4', 'bad6']) t.equal(await stored(id), undefined, `${id} was not stored`)
})

t.test('company add of an existing id exits 1 and changes nothing', async t => {
  const r = await epx(dir, 'company', 'add', 'acme-bsp', '--name', 'Other')
  t.equal(r.code, 1)
  t.equal(r.err, 'epx: company acme-bsp already exists')
  t.equal((await stored('acme-bsp'))?.name, 'ACME')
})

t.test('company suspend and resume switch the status, and say when nothing changed', async t => {
  const s = await epx(dir, 'company', 'suspend', 'acme-bsp')
  t.equal(s.code, 0)
  t.equal(s.out, 'company acme-bsp is now suspended')
  t.equal((await stored('acme-bsp'))?.status, 'suspended')
  t.equal((await epx(dir, 'company', 'suspend', 'acme-bsp')).out, 'company acme-bsp was already suspended')
  const r = await epx(dir, 'company', 'resume', 'acme-bsp')
  t.equal(r.out, 'company acme-bsp is now active')
  t.equal((await stored('acme-bsp'))?.status, 'active')
})

t.test('company suspend, resume and show of an unknown company exit 1', async t => {
  for (const sub of ['suspend', 'resume', 'show']) {
    const r = await epx(dir, 'company', sub, 'ghost')
    t.equal(r.code, 1, `${sub} exits 1`)
    t.match(r.err, /^epx: no company '?ghost'?/)
  }
})

t.test('company show prints the binding, perimeter and token counts; --json the record', async t => {
  const r = await epx(dir, 'company', 'show', 'volt')
  t.equal(r.code, 0)
  t.match(r.out, /certificate subject:\s+CN=volt-prod,O=Volt/)
  t.match(r.out, /perimeter:\s+2 site\(s\): PRM00000000000001, PRM00000000000002/)
  t.match(r.out, /tokens:\s+0 usable/)
  const j = await epx(dir, 'company', 'show', 'volt', '--json')
  t.match(JSON.parse(j.out), { id: 'volt', status: 'active' })
})

t.test('company list shows every company; --json prints an array', async t => {
  const r = await epx(dir, 'company', 'list')
  t.equal(r.code, 0)
  t.match(r.lines[0], /^ID\s+NAME\s+STATUS\s+PERIMETER\s+CERTIFICATE SUBJECT\s+PINS$/)
  t.match(r.out, /acme-bsp\s+ACME\s+active\s+1 site\(s\)\s+CN=acme-bsp,O=ACME/)
  t.equal(r.err, '', 'no overlap to report')
  t.match(r.out, /volt\s+Volt SA\s+active\s+2 site\(s\)/)
  const j = JSON.parse((await epx(dir, 'company', 'list', '--json')).out)
  t.same(j.map((c: { id: string }) => c.id).sort(), ['acme-bsp', 'volt'])
})

t.test('one BSP per site: a perimeter change or a resume that would overlap is refused, naming the other company', async t => {
  const grow = await epx(dir, 'company', 'perimeter', 'volt', '--sites', 'PRM00000000000002,PRM00000000000009')
  t.equal(grow.code, 1)
  t.match(grow.err, /would share site\(s\) PRM00000000000009 with active company acme-bsp's/)
  t.same((await stored('volt'))?.perimeter, ['PRM00000000000001', 'PRM00000000000002'], 'unchanged')
  t.equal((await epx(dir, 'company', 'suspend', 'volt')).code, 0)
  t.equal((await epx(dir, 'company', 'add', 'spare', '--name', 'Spare', '--sites', 'PRM00000000000002')).code, 0, 'a suspended company\'s sites are free')
  const resume = await epx(dir, 'company', 'resume', 'volt')
  t.equal(resume.code, 1)
  t.match(resume.err, /the perimeter of company volt would share site\(s\) PRM00000000000002 with active company spare's/)
  t.equal((await stored('volt'))?.status, 'suspended', 'still suspended')
  t.equal((await epx(dir, 'company', 'perimeter', 'volt', '--sites', 'PRM00000000000001')).code, 0, 'a suspended company\'s perimeter changes freely')
  t.equal((await epx(dir, 'company', 'resume', 'volt')).code, 0, 'resumed once its perimeter is its own')
})

t.test('overlaps stored before the rule are reported by company list, and the company can still be suspended or pinned', async t => {
  const d = await initializedDataDir(t)
  const store = openStore(inDataDir(d, 'epx.lmdb'))
  const asStored = openCompanies(store, { onePerSite: false })
  for (const id of ['old-a', 'old-b']) await asStored.add({ id, name: id, status: 'active', certSubject: `CN=${id},O=${id}`, perimeter: 'all', createdAt: '2026-11-01T00:00:00Z' })
  await store.close()
  const list = await epx(d, 'company', 'list')
  t.equal(list.code, 0)
  t.match(list.err, /^epx: warning: active companies old-a and old-b share every site \(the perimeter of old-a and of old-b is "all sites"\): the last programme either sends takes the site from the other's, whatever their emitted_at; narrow one perimeter/)
  t.match((await epx(d, 'company', 'list', '--json')).err, /warning: active companies old-a and old-b/)
  t.equal((await epx(d, 'company', 'pin-cert', 'old-a', 'AB'.repeat(32))).code, 0, 'a pin change is not a perimeter change')
  t.equal((await epx(d, 'company', 'suspend', 'old-b')).code, 0)
  t.equal((await epx(d, 'company', 'list')).err, '', 'nothing to report once one is suspended')
})

t.test('company list on an empty store says how to add one', async t => {
  const empty = await initializedDataDir(t)
  const r = await epx(empty, 'company', 'list')
  t.equal(r.code, 0)
  t.match(r.out, /no companies yet; add one with 'epx company add ID --name NAME'/)
})

t.test('company pin-cert and unpin-cert: pins by certificate file or fingerprint, several at once, shown by show and list', async t => {
  const d = await initializedDataDir(t)
  t.equal((await epx(d, 'company', 'add', 'acme', '--name', 'acme')).code, 0)
  const folder = join(d, 'certs')   // t.testdir() again would wipe the data folder
  mkdirSync(folder)
  const currentPem = clientCert('CN=acme,O=acme').certPem
  const renewedPem = issueCert(testPki().clientCa, { subject: 'CN=acme,O=acme', days: 30 }).certPem
  const fp = (pem: string) => new X509Certificate(pem).fingerprint256
  writeFileSync(join(folder, 'current.crt'), currentPem)

  const pinned = await epx(d, 'company', 'pin-cert', 'acme', join(folder, 'current.crt'))
  t.equal(pinned.code, 0, pinned.err)
  t.equal(pinned.lines[0], `pinned ${fp(currentPem)} for company acme`)
  t.equal(pinned.err, '', 'no warning: the subject is the bound one')
  // A fingerprint as another tool prints it (lower case, no colons) is the same pin.
  const typed = await epx(d, 'company', 'pin-cert', 'acme', fp(renewedPem).replace(/:/g, '').toLowerCase())
  t.equal(typed.lines[0], `pinned ${fp(renewedPem)} for company acme`)
  t.match(typed.lines[1], /2 pinned/)
  t.equal((await epx(d, 'company', 'pin-cert', 'acme', fp(currentPem))).lines[0], `${fp(currentPem)} was already pinned for company acme`)
  t.same((await stored(d, 'acme'))?.certPins, [fp(currentPem), fp(renewedPem)], 'stored in node\'s AB:CD:… form')

  const show = await epx(d, 'company', 'show', 'acme')
  t.match(show.out, new RegExp(`pinned certificates:\\s+${fp(currentPem)}\\n\\s+${fp(renewedPem)}`))
  t.same(JSON.parse((await epx(d, 'company', 'show', 'acme', '--json')).out).certPins, [fp(currentPem), fp(renewedPem)])
  t.match((await epx(d, 'company', 'list')).out, /acme\s+acme\s+active\s+all\s+CN=acme,O=acme\s+2$/m)

  const unpinned = await epx(d, 'company', 'unpin-cert', 'acme', join(folder, 'current.crt'))
  t.equal(unpinned.lines[0], `unpinned ${fp(currentPem)} from company acme`)
  t.same((await stored(d, 'acme'))?.certPins, [fp(renewedPem)])
  t.equal((await epx(d, 'company', 'unpin-cert', 'acme', fp(currentPem))).lines[0], `${fp(currentPem)} was not pinned for company acme`)
  const last = await epx(d, 'company', 'unpin-cert', 'acme', fp(renewedPem))
  t.match(last.lines[1], /no pins: the bound subject alone decides/)
  t.match((await epx(d, 'company', 'show', 'acme')).out, /pinned certificates:\s+\(none/)
})

t.test('company pin-cert warns when the certificate is not of the bound subject, and refuses what is not a certificate', async t => {
  const d = await initializedDataDir(t)
  await epx(d, 'company', 'add', 'acme', '--name', 'acme')
  const folder = join(d, 'certs')   // t.testdir() again would wipe the data folder
  mkdirSync(folder)
  writeFileSync(join(folder, 'beta.crt'), clientCert('CN=beta,O=beta').certPem)
  writeFileSync(join(folder, 'junk.txt'), 'hello')
  const other = await epx(d, 'company', 'pin-cert', 'acme', join(folder, 'beta.crt'))
  t.equal(other.code, 0)
  t.match(other.err, /warning: the certificate's subject \(CN=beta,O=beta\) is not the one bound to company acme \(CN=acme,O=acme\)/)
  const cases: Array<[string[], number, RegExp]> = [
    [['acme', join(folder, 'junk.txt')], 2, /is not a PEM certificate/],
    [['acme', join(folder, 'none.crt')], 2, /neither a SHA-256 fingerprint .* nor a readable file: ENOENT/],
    [['acme', 'AB:CD'], 2, /neither a SHA-256 fingerprint/],
    [['acme'], 2, /missing FILE\|FINGERPRINT/],
    [['ghost', join(folder, 'beta.crt')], 1, /no company ghost/],
  ]
  for (const [args, code, message] of cases) {
    for (const sub of ['pin-cert', 'unpin-cert']) {
      const r = await epx(d, 'company', sub, ...args)
      t.equal(r.code, code, `${sub} ${args.join(' ')} exits ${code}`)
      t.match(r.err, message)
    }
  }
})

// DECISIONS.md "Tenure: who holds a site, and when".
t.test('company history: every change of the perimeter and the status, oldest first, with who made it', async t => {
  const d = await initializedDataDir(t)
  t.equal((await epx(d, 'company', 'add', 'hist', '--name', 'H', '--sites', 'PRM30000000000001,PRM30000000000002')).code, 0)
  t.equal((await epx(d, 'company', 'perimeter', 'hist', '--sites', 'PRM30000000000001')).code, 0)
  t.equal((await epx(d, 'company', 'suspend', 'hist')).code, 0)
  t.equal((await epx(d, 'company', 'resume', 'hist')).code, 0)
  const r = await epx(d, 'company', 'history', 'hist')
  t.equal(r.code, 0, r.err)
  t.match(r.lines[0], /^AT\s+CHANGE\s+STATUS\s+PERIMETER\s+BY$/)
  t.same(r.lines.slice(1).map(l => l.split(/\s{2,}/).slice(1, 4)), [
    ['added', 'active', '2 site(s): PRM30000000000001, PRM30000000000002'],
    ['perimeter', 'active', '1 site(s): PRM30000000000001'],
    ['suspended', 'suspended', '1 site(s): PRM30000000000001'],
    ['resumed', 'active', '1 site(s): PRM30000000000001'],
  ])
  t.match(r.lines[1], /^\d{4}-\d{2}-\d{2}T\S+Z\s.*\scli \(\S+\)$/, 'its instant and the system user who ran the command')
  const json = JSON.parse((await epx(d, 'company', 'history', 'hist', '--json')).out)
  t.match(json[0], { companyId: 'hist', kind: 'added', status: 'active', actor: { kind: 'cli' } })
  t.notOk('seq' in json[0], 'the store\'s order is not shown')
  const ghost = await epx(d, 'company', 'history', 'ghost')
  t.equal(ghost.code, 1)
  t.match(ghost.err, /no company 'ghost'/)
})

t.test('company limits sets, shows and resets a company\'s own request budgets and storage quota, audited', async t => {
  const d = await initializedDataDir(t)
  t.equal((await epx(d, 'company', 'add', 'hasty', '--name', 'Hasty')).code, 0)
  const shown = await epx(d, 'company', 'limits', 'hasty')
  t.equal(shown.lines[0], 'company hasty: GET and HEAD the configuration\'s (api.rateLimit); POST the configuration\'s (api.rateLimit)', 'none of its own at first')
  t.match(shown.lines[1], /^storage quota: 0 bytes of 536870912 bytes \(512 MiB\) used on \d{4}-\d\d-\d\d \(Europe\/Paris; 0 programme\(s\) accepted; the configuration's \(inbound\.maxBytesPerCompanyPerDay\)\); resets at 00:00 Paris time/)
  const set = await epx(d, 'company', 'limits', 'hasty', '--get', '100/1000', '--post', '0.5/3')
  t.equal(set.code, 0, set.err)
  t.equal(set.lines[0], 'company hasty: GET and HEAD 100/s, bursts of 1000; POST 0.5/s, bursts of 3')
  t.same((await stored(d, 'hasty'))?.rateLimit, { get: { perSecond: 100, burst: 1000 }, post: { perSecond: 0.5, burst: 3 } })
  t.match((await epx(d, 'company', 'show', 'hasty')).out, /request budgets:\s+GET and HEAD 100\/s, bursts of 1000; POST 0\.5\/s, bursts of 3/, 'show says them too')
  t.equal((await epx(d, 'company', 'limits', 'hasty', '--get', 'default')).lines[0], 'company hasty: GET and HEAD the configuration\'s (api.rateLimit); POST 0.5/s, bursts of 3', 'one back to the configuration\'s')
  await epx(d, 'company', 'limits', 'hasty', '--post', 'default')
  t.notOk(Object.hasOwn((await stored(d, 'hasty'))!, 'rateLimit'), 'none of its own: no rateLimit key left')
  for (const bad of ['100', '0/10', '5/0', '5/1.5', 'x/y', '5/2000000']) {
    const r = await epx(d, 'company', 'limits', 'hasty', '--get', bad)
    t.equal(r.code, 2, `--get ${bad}: a usage error`)
    t.match(r.err, /expected RATE\/BURST/)
  }
  t.equal((await epx(d, 'company', 'limits', 'nobody', '--get', '1/1')).code, 1, 'no such company')

  const quota = await epx(d, 'company', 'limits', 'hasty', '--quota-bytes', '256MiB')
  t.equal(quota.code, 0, quota.err)
  t.match(quota.lines[1], /^storage quota: 0 bytes of 268435456 bytes \(256 MiB\) used on .*; its own\)/)
  t.equal((await stored(d, 'hasty'))?.quotaBytesPerDay, 268435456)
  t.match((await epx(d, 'company', 'show', 'hasty')).out, /storage quota:\s+0 bytes of 268435456 bytes \(256 MiB\) used on/, 'show says it with today\'s use')
  t.match(JSON.parse((await epx(d, 'company', 'show', 'hasty', '--json')).out), { quotaBytesPerDay: 268435456, quotaToday: { bytes: 0, programmes: 0, limit: 268435456 } })
  for (const bad of ['0', '1.5', '2TiB', '1125899906842625', 'lots']) {
    const r = await epx(d, 'company', 'limits', 'hasty', '--quota-bytes', bad)
    t.equal(r.code, 2, `--quota-bytes ${bad}: a usage error`)
    t.match(r.err, /expected a whole number of bytes from 1 to 1125899906842624 \(1 PiB\), optionally followed by KiB, MiB or GiB/)
  }
  await epx(d, 'company', 'limits', 'hasty', '--quota-bytes', 'default')
  t.notOk(Object.hasOwn((await stored(d, 'hasty'))!, 'quotaBytesPerDay'), 'back to the configuration\'s: no key left')
  const store = openStore(inDataDir(d, 'epx.lmdb'))
  try {
    const records = openAudit(store).list({ action: 'company.limits' })
    t.same(records.map(r => [r.subject, r.details]), [
      ['hasty', { rateLimit: { get: { perSecond: 100, burst: 1000 }, post: { perSecond: 0.5, burst: 3 } }, quotaBytesPerDay: 'default' }],
      ['hasty', { rateLimit: { post: { perSecond: 0.5, burst: 3 } }, quotaBytesPerDay: 'default' }],
      ['hasty', { rateLimit: 'default', quotaBytesPerDay: 'default' }],
      ['hasty', { rateLimit: 'default', quotaBytesPerDay: 268435456 }],
      ['hasty', { rateLimit: 'default', quotaBytesPerDay: 'default' }],
    ], 'each change audited, in order; the refused ones not')
  } finally { await store.close() }
})
