import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../../', import.meta.url))
// Two tsc runs, npm pack and npm install: ~20 s alone, 50 s beside two other test files on 2 cores.
t.setTimeout(240_000)

t.test('a BSP installs the client from its tarball in a folder of its own, runs its bin, imports it, compiles against its types', async t => {
  const dir = t.testdir()
  // Built into the test's folder: packages/epx-bsp/dist is left to `npm run build:bsp`.
  const built = join(dir, 'epx-bsp')
  await run(process.execPath, [join(ROOT, 'scripts/build-bsp-package.mjs'), '--out', built], { cwd: ROOT })
  const packed = JSON.parse((await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: built })).stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
  const files = packed[0]!.files.map(f => f.path)
  t.ok(files.includes('dist/index.js') && files.includes('bin/epx-bsp.js') && files.includes('dist/types/bsp/index.d.ts'), 'built JavaScript, its bin and its declarations')
  t.notOk(files.some(f => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript sources')

  // A fresh folder, no registry: the tarball has no dependencies to fetch.
  const app = join(dir, 'app')
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'bsp-app', private: true, type: 'module' }))
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, packed[0]!.filename)], { cwd: app })
  t.same(readdirSync(join(app, 'node_modules')).filter(n => !n.startsWith('.')), ['epx-bsp'], 'nothing but the client installed')

  const help = await run('npx', ['--no-install', 'epx-bsp', '--help'], { cwd: app })
  t.match(help.stdout, /^Usage: epx-bsp <subcommand>/)
  t.match(help.stdout, /pull .*\n.*push .*\n.*status /)
  const pullHelp = await run('npx', ['--no-install', 'epx-bsp', 'pull', '--help'], { cwd: app })
  t.match(pullHelp.stdout, /^Usage: epx-bsp pull --url URL/)
  await t.rejects(run('npx', ['--no-install', 'epx-bsp', 'push'], { cwd: app }), { code: 2, stderr: /epx-bsp: missing FILE/ }, 'a usage error names the bin')

  writeFileSync(join(app, 'use.mjs'), [
    "import { checkProgramme, createBspClient, pushProgramme, realTiming } from 'epx-bsp'",
    "const checked = checkProgramme({ schema_version: 'v0.2' })",
    "console.log(JSON.stringify({ ok: checked.ok, pointers: Object.keys(checked.details).sort(), fns: [typeof createBspClient, typeof pushProgramme, typeof realTiming.sleep] }))",
  ].join('\n'))
  const used = JSON.parse((await run(process.execPath, ['use.mjs'], { cwd: app })).stdout)
  t.match(used, { ok: false, fns: ['function', 'function', 'function'] })
  t.ok(used.pointers.includes('/type'), 'the server\'s own details, keyed by JSON Pointer')

  writeFileSync(join(app, 'use.ts'), [
    "import { createBspClient, type BspClient, type PushResult } from 'epx-bsp'",
    "const client: BspClient = createBspClient({ url: 'https://localhost:8443', cert: '', key: '', token: 'epx_x' })",
    "const kind: PushResult['kind'] = 'invalid'",
    '// @ts-expect-error: the options are typed (a token is required)',
    "createBspClient({ url: 'https://localhost:8443', cert: '', key: '' })",
    'export { client, kind }',
  ].join('\n'))
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')] },
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
  t.match(unknown.err.join('\n'), /^epx-bsp: unknown subcommand 'epx-bsp fetch'; expected one of: pull, push, status/)
})
