import t from 'tap'
import { inDataDir } from '../../src/config.ts'
import { openCompanies } from '../../src/store/companies.ts'
import { openStore } from '../../src/store/open-store.ts'
import { epx, initializedDataDir } from '../helpers/cli.ts'

const dir = await initializedDataDir(t)

/** The record as the plugin would read it, straight from the store. */
async function stored (id: string) {
  const store = openStore(inDataDir(dir, 'epx.lmdb'))
  try { return openCompanies(store).get(id) } finally { await store.close() }
}

t.test('company add stores the company, active, with the default subject CN=<ID>,O=<NAME> and perimeter all', async t => {
  const r = await epx(dir, 'company', 'add', 'acme-bsp', '--name', 'ACME')
  t.equal(r.code, 0, r.err)
  t.match(r.out, /added company acme-bsp \(ACME\)/)
  t.match(await stored('acme-bsp'), { id: 'acme-bsp', name: 'ACME', status: 'active', certSubject: 'CN=acme-bsp,O=ACME', perimeter: 'all' })
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
  t.match(r.lines[0], /^ID\s+NAME\s+STATUS\s+PERIMETER\s+CERTIFICATE SUBJECT$/)
  t.match(r.out, /acme-bsp\s+ACME\s+active\s+all\s+CN=acme-bsp,O=ACME/)
  t.match(r.out, /volt\s+Volt SA\s+active\s+2 site\(s\)/)
  const j = JSON.parse((await epx(dir, 'company', 'list', '--json')).out)
  t.same(j.map((c: { id: string }) => c.id).sort(), ['acme-bsp', 'volt'])
})

t.test('company list on an empty store says how to add one', async t => {
  const empty = await initializedDataDir(t)
  const r = await epx(empty, 'company', 'list')
  t.equal(r.code, 0)
  t.match(r.out, /no companies yet; add one with 'epx company add ID --name NAME'/)
})
