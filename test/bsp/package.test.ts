import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startEpx } from '../helpers/epx.ts'
import { testPki } from '../helpers/certs.ts'
import { INBOUND_PATH, programme, siteId } from '../helpers/programme.ts'
import { LONG } from '../helpers/long.ts'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
// npm pack (its prepack builds: two builds and tsc), npm install, tsc: ~30 s alone, a minute beside two other test files on 2 cores.
t.setTimeout(240_000)

// A TypeScript user's compile against the declarations (tsc through json-schema-to-ts's types,
// the file's costliest step) runs under EPX_LONG=1 (`npm run campaign`); the build above
// has just emitted those declarations with tsc.
t.test(`a BSP installs the client from its tarball in a folder of its own, runs its bin, imports it${LONG ? ', compiles against its types' : ''}`, async t => {
  const dir = t.testdir()
  // `npm pack` alone, as the service operator runs it: its prepack builds the package first
  // (packages/epx-bsp/dist, as `npm run build:bsp` leaves it), so no tarball is of a stale build.
  const pack = (await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: join(ROOT, 'packages/epx-bsp') })).stdout
  const packed = JSON.parse(pack.slice(pack.search(/^\[/m))) as Array<{ filename: string; files: Array<{ path: string }> }>
  const files = packed[0]!.files.map(f => f.path)
  t.ok(files.includes('dist/index.js') && files.includes('bin/epx-bsp.js') && files.includes('dist/types/bsp/index.d.ts'), 'built JavaScript, its bin and its declarations')
  t.notOk(files.some(f => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript sources')

  // A fresh folder outside this repository (no node_modules above it to lean on), no
  // registry: the tarball has no dependencies to fetch.
  const app = mkdtempSync(join(tmpdir(), 'epx-bsp-app-'))
  t.teardown(() => rmSync(app, { recursive: true, force: true }))
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'bsp-app', private: true, type: 'module' }))
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, packed[0]!.filename)], { cwd: app })
  t.same(readdirSync(join(app, 'node_modules')).filter(n => !n.startsWith('.')), ['epx-bsp'], 'nothing but the client installed')

  const help = await run('npx', ['--no-install', 'epx-bsp', '--help'], { cwd: app })
  // The link npx has just run, without npm's start (a second a call on a loaded machine).
  const bsp = (...args: string[]) => run(join(app, 'node_modules/.bin/epx-bsp'), args, { cwd: app })
  t.match(help.stdout, /^Usage: epx-bsp <subcommand>/)
  t.match(help.stdout, /pull .*\n.*push .*\n.*status .*\n.*realise .*\n.*sites /)
  const pullHelp = await bsp('pull', '--help')
  t.match(pullHelp.stdout, /^Usage: epx-bsp pull --url URL/)
  await t.rejects(bsp('push'), { code: 2, stderr: /epx-bsp: missing FILE/ }, 'a usage error names the bin')
  const pushHelp = await bsp('push', '--help')
  t.match(pushHelp.stdout, /--max-site-kw KW/, 'the sanity bound, when the service set another')
  t.match(pushHelp.stdout, /late \(a programme for today whose every period had begun/, 'the entry status late')

  // The installed bin against a real epx: a programme, meter values, then the day as the BSP reads it.
  const epx = await startEpx(t, { sites: 2 })
  const { cert } = await epx.addCompany('acme')
  const { secret } = await epx.addToken('acme', ['inbound:programme-soutirage', 'outbound:realise'])
  const bspFiles = { cert: join(app, 'bsp.crt'), key: join(app, 'bsp.key'), ca: join(app, 'ca.crt'), token: join(app, 'token') }
  writeFileSync(bspFiles.cert, cert.certPem)
  writeFileSync(bspFiles.key, cert.keyPem)
  writeFileSync(bspFiles.ca, testPki().serverCa.certPem)
  writeFileSync(bspFiles.token, secret + '\n', { mode: 0o600 })
  t.equal((await epx.request({ method: 'POST', path: INBOUND_PATH, cert, token: secret, body: programme({ slots: 2, kwh: j => [4, 0][j]! }) })).status, 202)
  epx.clock.set('2026-11-22T00:00:00Z')
  await epx.handle.reportMetering([
    { siteId: siteId(1), startUtc: '2026-11-21T23:00:00Z', endUtc: '2026-11-21T23:15:00Z', kwh: 3.5 },
    { siteId: siteId(1), startUtc: '2026-11-21T23:15:00Z', endUtc: '2026-11-21T23:30:00Z', kwh: 0 },
  ])
  const conn = ['--url', epx.url.href, '--cert', bspFiles.cert, '--key', bspFiles.key, '--ca', bspFiles.ca, '--token-file', bspFiles.token, '--site', siteId(1), '--date', '2026-11-22']
  const realise = await bsp('realise', ...conn)
  t.match(realise.stdout, /^DEBUT_UTC +FIN_UTC +PROGRAMMEE_KWH +REALISEE_KWH +VERDICT +MANQUE_KWH\n2026-11-21T23:00:00Z +2026-11-21T23:15:00Z +4\.000 +3\.500 +short +0\.500\n/)
  t.match(realise.stderr, /shortfall 0\.500 kWh; 1 short, 1 curtailment_respected, 94 unconstrained/)
  const json = JSON.parse((await bsp('realise', ...conn, '--json')).stdout)
  t.same(json.totaux, { energie_programmee_kwh: 4, energie_realisee_kwh: 3.5, manque_kwh: 0.5, verdicts: { met: 0, short: 1, curtailment_respected: 1, curtailment_broken: 0, no_data: 0, unconstrained: 94 }, tardifs: 0 })
  await t.rejects(bsp('realise', ...conn.slice(0, -4), '--site', siteId(2), '--date', '2026-11-22'),
    { code: 1, stderr: /^epx-bsp: NOTHING_TO_COMPARE: nothing to compare for site PRM30000000000002 on 2026-11-22/ })
  const sites = await bsp('sites', ...conn.slice(0, -4))
  t.match(sites.stderr, /^epx-bsp: your company's perimeter is every site the service manages$/m, 'the perimeter read, with a token of other scopes')
  // `epx-bsp realise … | head -1`: the reader gone after its line, the bin ends quietly.
  const headed = await run('bash', ['-c', `node_modules/.bin/epx-bsp realise ${conn.map(a => `'${a}'`).join(' ')} | head -1; exit "\${PIPESTATUS[0]}"`], { cwd: app })
  t.match(headed.stdout, /^DEBUT_UTC +FIN_UTC/)
  t.notMatch(headed.stderr, /EPIPE|\n\s+at /, 'no EPIPE, no stack')

  writeFileSync(join(app, 'use.mjs'), [
    "import { checkProgramme, createBspClient, pushProgramme, realTiming } from 'epx-bsp'",
    // An empty emitted_by: the schema's minLength, which ajv's generated code checks with a helper of its runtime, bundled.
    "const checked = checkProgramme({ schema_version: 'v0.2', emitted_by: '' })",
    "console.log(JSON.stringify({ ok: checked.ok, pointers: Object.keys(checked.details).sort(), fns: [typeof createBspClient, typeof pushProgramme, typeof realTiming.sleep] }))",
  ].join('\n'))
  const used = JSON.parse((await run(process.execPath, ['use.mjs'], { cwd: app })).stdout)
  t.match(used, { ok: false, fns: ['function', 'function', 'function'] })
  t.ok(used.pointers.includes('/type'), 'the server\'s own details, keyed by JSON Pointer')
  t.ok(used.pointers.includes('/emitted_by'), 'an empty emitted_by found, as the server finds it')
  if (!LONG) return

  writeFileSync(join(app, 'use.ts'), [
    "import { createBspClient, type BspClient, type BspClientOptions, type BesoinsAnswer, type ProgrammeAnswer, type StatusAnswer, type RealiseAnswer,",
    "  type Retry, type Refused, type Unreachable, type BesoinsAgreges, type BesoinsSite, type PuissanceDisponible, type JalonBesoin, type Receipt, type ReceiptEntry,",
    "  type ProgrammeStatus, type ProgrammeStatusEntry, type RealiseBody, type Creneau, type Totaux, type Verdict, type Checked, type CheckProgrammeOptions,",
    "  type PullOptions, type RoundReport, type Outcome, type PairState, type WatchOptions, type PushOptions, type PushResult, type Timing } from 'epx-bsp'",
    "const options: BspClientOptions = { url: 'https://localhost:8443', cert: 'PEM', key: 'PEM', token: 'epx_x' }",
    'const client: BspClient = createBspClient(options)',
    "const kind: PushResult['kind'] = 'invalid'",
    "const status: Extract<PushResult, { kind: 'received' }>['receipt']['instructions'][number]['status'] = 'late'",
    '// @ts-expect-error: the options are typed (a token is required)',
    "createBspClient({ url: 'https://localhost:8443', cert: '', key: '' })",
    '// The answers are typed down to the documents they carry.',
    'export function firstFloor (a: BesoinsAnswer): number | undefined {',
    "  return a.kind === 'document' ? a.document.sites[0]?.puissance_disponible[0]?.p_max_kw : undefined",
    '}',
    "export function why (a: ProgrammeAnswer | StatusAnswer | RealiseAnswer): string {",
    "  return a.kind === 'refused' ? `${a.code ?? a.status}: ${a.message}` : a.kind === 'unreachable' ? a.detail : a.kind === 'retry' ? a.detail : a.kind",
    '}',
    "export type Named = [Retry, Refused, Unreachable, BesoinsAgreges, BesoinsSite, PuissanceDisponible, JalonBesoin, Receipt, ReceiptEntry, ProgrammeStatus, ProgrammeStatusEntry,",
    '  RealiseBody, Creneau, Totaux, Verdict, Checked<unknown>, CheckProgrammeOptions, PullOptions, RoundReport, Outcome, PairState, WatchOptions, PushOptions, Timing]',
    'export { client, kind, status }',
  ].join('\n'))
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    // Nothing but the tarball and Node's own types (which any TypeScript user on Node has);
    // every declaration checked, none skipped.
    compilerOptions: {
      module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, skipLibCheck: false, noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')],
    },
    files: ['use.ts'],
  }))
  const tsc = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: app }).catch(e => e as { stdout: string; code: number })
  t.equal(tsc.stdout, '', 'a TypeScript user compiles against the declarations, without one error')
})

t.test('epx-bsp speaks as itself: help, version, usage errors name the bin', async t => {
  const { runBspCli } = await import('../../src/cli/bsp-main.ts')
  const io = () => {
    const out: string[] = []
    const err: string[] = []
    return { out, err, io: { out: (l: string) => { out.push(l) }, err: (l: string) => { err.push(l) } } }
  }
  const help = io()
  t.equal(await runBspCli(['status', '--help'], help.io), 0)
  t.match(help.out.join('\n'), /^Usage: epx-bsp status /)
  t.notMatch(help.out.join('\n'), /epx bsp|--data/)
  const version = io()
  t.equal(await runBspCli(['--version'], version.io), 0)
  t.equal(version.out.length, 1)
  const bare = io()
  t.equal(await runBspCli([], bare.io), 2, 'no subcommand: the listing, as a usage error')
  t.match(bare.err.join('\n'), /Usage: epx-bsp <subcommand>/)
  const unknown = io()
  t.equal(await runBspCli(['fetch'], unknown.io), 2)
  t.match(unknown.err.join('\n'), /^epx-bsp: unknown subcommand 'epx-bsp fetch'; expected one of: pull, push, status, realise, sites/)
  const realise = io()
  t.equal(await runBspCli(['realise', '--help'], realise.io), 0)
  t.match(realise.out.join('\n'), /^Usage: epx-bsp realise --url URL .* --site PRM --date YYYY-MM-DD \[--json\]/)
  const sites = io()
  t.equal(await runBspCli(['sites', '--help'], sites.io), 0)
  t.match(sites.out.join('\n'), /^Usage: epx-bsp sites --url URL .*\[--json\]/)
})
