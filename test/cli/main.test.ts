import t from 'tap'
import { builtCli, epx, initializedDataDir, spawnEpx } from '../helpers/cli.ts'

const dir = t.testdir()

t.test('epx --help lists every command, exits 0 (real binary)', async t => {
  const r = await spawnEpx(['--help'])
  t.equal(r.code, 0)
  for (const name of ['init', 'company', 'cert', 'token', 'sites', 'start', 'demo']) t.match(r.stdout, new RegExp(`^  ${name} `, 'm'))
  t.match(r.stdout, /--data DIR/)
  t.equal(r.stderr, '')
})

t.test('an unknown command exits 2 with a message naming it (real binary)', async t => {
  const r = await spawnEpx(['frobnicate'])
  t.equal(r.code, 2)
  t.equal(r.stdout, '')
  t.match(r.stderr, /^epx: unknown command 'frobnicate'; the commands are: init, company/)
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace')
})

t.test('no command prints the usage on stderr and exits 2', async t => {
  const r = await epx(dir)
  t.equal(r.code, 2)
  t.match(r.err, /^Usage: epx \[--data DIR\] <command>/)
})

t.test('an unknown option before the command exits 2', async t => {
  const r = await epx(dir, '--frob', 'init')
  t.equal(r.code, 2)
  t.match(r.err, /unknown option '--frob' before the command/)
})

t.test('--data without a folder exits 2', async t => {
  const r = await epx(dir, 'company', 'list', '--data')
  t.equal(r.code, 2)
  t.match(r.err, /'--data DIR' needs a folder/)
})

t.test('--version prints the package version', async t => {
  const r = await epx(dir, '--version')
  t.equal(r.code, 0)
  t.match(r.out, /^\d+\.\d+\.\d+/)
})

t.test('every command and subcommand answers --help with its usage, exit 0', async t => {
  const all = [
    ['init'], ['company', 'add'], ['company', 'suspend'], ['company', 'resume'], ['company', 'show'], ['company', 'list'],
    ['cert', 'issue'], ['token', 'create'], ['token', 'list'], ['token', 'revoke'], ['sites', 'list'], ['start'], ['demo'],
  ]
  for (const words of all) {
    const r = await epx(dir, ...words, '--help')
    t.equal(r.code, 0, `${words.join(' ')} --help exits 0`)
    t.match(r.out, new RegExp(`^Usage: epx ${words.join(' ')}`), `${words.join(' ')} --help shows its usage`)
  }
  for (const group of ['company', 'cert', 'token', 'sites']) {
    const r = await epx(dir, group, '--help')
    t.equal(r.code, 0)
    t.match(r.out, /Subcommands:/, `${group} --help lists its subcommands`)
  }
  const h = await epx(dir, 'help', 'token')
  t.match(h.out, /^Usage: epx token <subcommand>/, 'epx help CMD is CMD --help')
})

t.test('a command group without a subcommand, or with an unknown one, exits 2', async t => {
  const none = await epx(dir, 'company')
  t.equal(none.code, 2)
  t.match(none.err, /Subcommands:/)
  const bad = await epx(dir, 'token', 'mint')
  t.equal(bad.code, 2)
  t.match(bad.err, /unknown subcommand 'epx token mint'; expected one of: create, list, revoke/)
})

t.test('an unknown option of a command exits 2, names it and points to --help', async t => {
  const r = await epx(dir, 'init', '--force')
  t.equal(r.code, 2)
  t.match(r.err, /^epx: unknown option '--force'\nusage: epx init\n\(see 'epx init --help'\)$/)
})

t.test('a command on a folder that was never initialized exits 1 and says to run epx init', async t => {
  for (const words of [['company', 'list'], ['token', 'list'], ['sites', 'list'], ['cert', 'issue', 'acme', '--out', dir], ['start']]) {
    const r = await epx(dir, ...words)
    t.equal(r.code, 1, `${words.join(' ')} exits 1`)
    t.match(r.err, /is not an epx data folder \(no epx\.config\.json\); run `epx init --data .*` first/)
  }
})

t.test('--data DIR works before or after the command, and as --data=DIR', async t => {
  const { runCli } = await builtCli()
  const seen: string[] = []
  const io = { out: (l: string) => seen.push(l), err: (l: string) => seen.push(l) }
  for (const argv of [['--data', dir, 'company', 'list'], ['company', 'list', '--data', dir], [`--data=${dir}`, 'company', 'list']]) {
    seen.length = 0
    t.equal(await runCli(argv, io), 1, argv.join(' '))
    t.match(seen.join('\n'), `${dir} is not an epx data folder`, 'the folder given is the one used')
  }
})

t.test('a reader of stdout gone away (epx … | head) ends a command quietly with its exit code, its work done', async t => {
  const dir = await initializedDataDir(t)
  const added = await spawnEpx(['--data', dir, 'company', 'add', 'acme', '--name', 'ACME'], { closedStdout: true })
  t.equal(added.stderr, '', 'no EPIPE, no stack')
  t.equal(added.code, 0)
  const list = await epx(dir, 'company', 'list', '--json')
  t.same((JSON.parse(list.out) as Array<{ id: string }>).map(c => c.id), ['acme'], 'what the command did stands')
  const refused = await spawnEpx(['--data', dir, 'company', 'add', 'acme', '--name', 'ACME'], { closedStdout: true })
  t.equal(refused.code, 1, 'a failing command keeps its exit code')
  t.match(refused.stderr, /^epx: company acme already exists/, 'and says why on stderr')
  const help = await spawnEpx(['--help'], { closedStdout: true })
  t.same([help.code, help.stderr], [0, ''])
})
