import t from 'tap'
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { loadConfig, type EpxConfig, type EpxConfigInput } from '../src/config.ts'

t.test('an empty configuration gets every documented default', async t => {
  const c = loadConfig(undefined)
  t.equal(c.api.port, 8443)
  t.equal(c.api.host, '127.0.0.1')
  t.equal(c.inbound.maxBodyBytes, 10 * 1024 * 1024, 'DECISIONS.md: 10 MiB body limit')
  t.equal(c.inbound.maxSites, 5000, 'DECISIONS.md: 5,000 sites')
  t.equal(c.inbound.requireContiguous, false, 'gaps allowed by default')
  t.equal(c.publish.dailyCron, '0 8 * * *')
  t.equal(c.publish.weekendCron, '0 8 * * 5')
  t.equal(c.publish.timezone, 'Europe/Paris')
  t.equal(c.publish.retentionDays, 90)
})

t.test('the EpxConfig type (from the schema) says what loadConfig returns: defaulted keys present, the two without a default optional', async t => {
  // Checked by `npm run typecheck`: each line fails to compile if the type drifts.
  const c: EpxConfig = loadConfig({})
  const present: { port: number; certFile: string; retentionDays: number } = { port: c.api.port, certFile: c.api.tls.certFile, retentionDays: c.publish.retentionDays }
  // @ts-expect-error api.publicBaseUrl has no default: it may be absent
  const base: string = c.api.publicBaseUrl
  // @ts-expect-error api.tls.crlFile neither
  const crl: string = c.api.tls.crlFile
  // @ts-expect-error the configuration is read-only
  const mutate = () => { c.api.tls.certFile = 'x' }
  // What a host passes: every key optional, an unknown key refused.
  const given: EpxConfigInput = { api: { tls: { crlFile: 'pki/client-ca.crl' } } }
  // @ts-expect-error not a key of the schema
  const typo: EpxConfigInput = { api: { prot: 8443 } }
  t.same(present, { port: 8443, certFile: 'pki/server.crt', retentionDays: 90 })
  t.same([base, crl], [undefined, undefined], 'absent at run time too')
  t.equal(loadConfig(given).api.tls.crlFile, 'pki/client-ca.crl')
  t.throws(() => loadConfig(typo), { code: 'EPX_CONFIG_INVALID' })
  t.throws(mutate, TypeError, 'and frozen')
})

t.test('an invalid configuration is refused with every faulty field named', async t => {
  t.throws(() => loadConfig({ api: { port: 70000 }, inbound: { maxSites: 0 }, nope: 1 }), {
    code: 'EPX_CONFIG_INVALID',
    message: /\/api\/port must be <= 65535.*\/inbound\/maxSites must be >= 1|\/inbound\/maxSites.*\/api\/port/,
  })
  t.throws(() => loadConfig({ nope: 1 }), { message: /additional properties 'nope'/ })
})

t.test('inbound.maxSiteKw: 100,000 kW by default (DECISIONS.md "Inbound", sanity bound); above 0 and at most 1e9', async t => {
  t.equal(loadConfig(undefined).inbound.maxSiteKw, 100_000)
  t.equal(loadConfig({ inbound: { maxSiteKw: 250_000.5 } }).inbound.maxSiteKw, 250_000.5)
  t.throws(() => loadConfig({ inbound: { maxSiteKw: 0 } }), { code: 'EPX_CONFIG_INVALID', message: /\/inbound\/maxSiteKw must be > 0/ })
  t.throws(() => loadConfig({ inbound: { maxSiteKw: 1e10 } }), { code: 'EPX_CONFIG_INVALID', message: /\/inbound\/maxSiteKw must be <= 1000000000/ })
})

t.test("the result is frozen and the host's object is not touched", async t => {
  const raw = { api: { port: 9000 } }
  const c = loadConfig(raw)
  t.same(raw, { api: { port: 9000 } }, 'no defaults written into the caller object')
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.api) && Object.isFrozen(c.api.tls))
})

t.test('the validator is generated at build time: a command that reads the configuration loads no schema compiler', async t => {
  // `epx company list` through the built CLI, in a plain node process; ajv's compiler is
  // CommonJS, so every file of it the process loaded is in require.cache.
  const dir = t.testdir({ 'epx.config.json': JSON.stringify({ host: {}, plugin: { api: { port: 9443 } } }) })
  const cli = pathToFileURL(resolve(import.meta.dirname, '../dist/cli.js')).href
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `
    import { createRequire } from 'node:module'
    const { runCli } = await import(${JSON.stringify(cli)})
    const code = await runCli(['--data', ${JSON.stringify(dir)}, 'company', 'list'], { out () {}, err: console.error })
    const ajv = Object.keys(createRequire(import.meta.url).cache).filter(f => /[\\\\/]node_modules[\\\\/]ajv[\\\\/]/.test(f))
    process.stdout.write(JSON.stringify({ code, ajv }))`], {
    encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000,
  })
  t.equal(r.stderr, '')
  const { code, ajv } = JSON.parse(r.stdout) as { code: number; ajv: string[] }
  t.equal(code, 0)
  t.same(ajv.filter(f => !/[\\/]ajv[\\/]dist[\\/]runtime[\\/]/.test(f)), [], 'only ajv\'s small runtime helpers are loaded')
})

t.test('store.kind: lmdb by default; postgres needs store.postgres, said so at load', async t => {
  t.equal(loadConfig({}).store.kind, 'lmdb', 'nothing changes for a configuration that does not ask')
  t.equal(loadConfig({}).store.postgres, undefined)
  t.throws(() => loadConfig({ store: { kind: 'postgres' } }), {
    code: 'EPX_CONFIG_INVALID', message: /kind "postgres" needs store\.postgres.*connectionString/,
  })
  t.throws(() => loadConfig({ store: { kind: 'mysql' } }), { message: /\/store\/kind must be equal to one of the allowed values/ })
  const c = loadConfig({ store: { kind: 'postgres', postgres: { connectionString: 'postgresql://epx@db.example/epx', passwordEnv: 'EPX_PG_PASSWORD' } } })
  t.same({ ...c.store.postgres }, {
    connectionString: 'postgresql://epx@db.example/epx', passwordEnv: 'EPX_PG_PASSWORD',
    tls: {}, poolSize: 4, statementTimeoutMs: 5000, connectTimeoutMs: 5000,
  }, 'documented defaults; the TLS mode is decided by the host (connect.ts)')
})

t.test('a password in the configuration is refused, with where to put it instead', async t => {
  const use = /passwordFile.*passwordEnv/
  t.throws(() => loadConfig({ store: { kind: 'postgres', postgres: { host: 'db', password: 'hunter2' } } }), { code: 'EPX_CONFIG_INVALID', message: use })
  t.throws(() => loadConfig({ store: { kind: 'postgres', postgres: { connectionString: 'postgresql://epx:hunter2@db/epx' } } }), { message: use })
  for (const raw of [{ host: 'db', password: 'hunter2' }, { connectionString: 'postgresql://epx:hunter2@db/epx' }]) {
    try {
      loadConfig({ store: { kind: 'postgres', postgres: raw } })
    } catch (err) {
      t.notMatch((err as Error).message, /hunter2/, 'the password is not repeated in the message')
    }
  }
})

t.test('store.postgres: keys that do not go together are refused, each with what to do', async t => {
  const refused = (postgres: object, message: RegExp) =>
    t.throws(() => loadConfig({ store: { kind: 'postgres', postgres } }), { code: 'EPX_CONFIG_INVALID', message }, message.source)
  refused({ connectionString: 'postgresql://epx@db/epx', host: 'db' }, /either connectionString or host, not both/)
  refused({ connectionString: 'postgresql://epx@db/epx?sslmode=disable' }, /TLS is set in store\.postgres\.tls.*not with sslmode/)
  refused({ connectionString: 'mysql://db' }, /\/store\/postgres\/connectionString must match pattern/)
  refused({ database: 'epx' }, /needs connectionString, host \(with port, database and user as needed\), or hosts/)
  refused({ host: 'db', passwordFile: 'pg.pass', passwordEnv: 'PGPASS' }, /either passwordFile or passwordEnv/)
  refused({ host: 'db', tls: { certFile: 'pg.crt' } }, /certFile and keyFile go together/)
  refused({ host: 'db', tls: { mode: 'disable', caFile: 'ca.crt' } }, /mode "disable" uses no certificate/)
  refused({ host: 'db', tls: { mode: 'verify-ca' } }, /\/store\/postgres\/tls\/mode must be equal to one of the allowed values/)
  refused({ host: 'db', passwordEnv: 'not a name' }, /\/store\/postgres\/passwordEnv must match pattern/)
  refused({ host: 'db', poolSize: 0 }, /\/store\/postgres\/poolSize must be >= 1/)
  t.ok(loadConfig({ store: { postgres: { host: '/var/run/postgresql', database: 'epx' } } }), 'a postgres section may wait while kind is still lmdb')
})

t.test('store.postgres.hosts and a connection string listing hosts: each member checked, said where', async t => {
  const refused = (postgres: object, message: RegExp) =>
    t.throws(() => loadConfig({ store: { kind: 'postgres', postgres } }), { code: 'EPX_CONFIG_INVALID', message }, message.source)
  const hosts = ['db1.example.net', 'db2.example.net:6432', '10.0.0.7:5433', '[2001:db8::7]:5433', '[::1]', '/var/run/postgresql:5434']
  t.same(loadConfig({ store: { kind: 'postgres', postgres: { hosts, database: 'epx' } } }).store.postgres!.hosts, hosts, 'host, host:port, [IPv6]:port, a socket folder')
  refused({ hosts: ['db1', 'db2'], host: 'db1' }, /\/store\/postgres: give either hosts or host, not both/)
  refused({ hosts: ['db1', 'db2'], port: 5432 }, /give either hosts or port, not both \(each member of hosts carries its port: host:port\)/)
  refused({ hosts: ['db1', 'db2:'] }, /\/store\/postgres\/hosts\/1 is not a host or host:port: "db2:": an empty port/)
  refused({ hosts: ['db1:70000'] }, /\/store\/postgres\/hosts\/0 .*the port 70000 is not a number from 1 to 65535/)
  refused({ hosts: ['2001:db8::7'] }, /an IPv6 address is written in brackets, with its port after them: \[2001:db8::1\]:5432/)
  refused({ hosts: ['[db1]:5432'] }, /only an IPv6 address is written in brackets/)
  refused({ hosts: ['db 1'] }, /"db 1": db 1 is not a host name or address/)
  refused({ hosts: [':5432'] }, /no host before the port/)
  refused({ hosts: ['db1', 'db1:5432'] }, /\/store\/postgres\/hosts: db1:5432 is listed twice/)
  refused({ hosts: [] }, /\/store\/postgres\/hosts must NOT have fewer than 1 items/)
  refused({ connectionString: 'postgresql://epx@db1/epx', hosts: ['db2'] }, /either connectionString or hosts, not both/)

  t.ok(loadConfig({ store: { kind: 'postgres', postgres: { connectionString: 'postgresql://epx@db1:5432,db2:5433/epx' } } }), 'libpq\'s list of hosts in a connection string')
  t.ok(loadConfig({ store: { kind: 'postgres', postgres: { connectionString: 'postgresql://epx@/epx?host=db1,db2&port=5432,5433' } } }), 'or in its parameters')
  refused({ connectionString: 'postgresql://epx@db1:5432,db2:x/epx' }, /\/store\/postgres\/connectionString is not a connection string \("db2:x": the port x is not a number/)
  refused({ connectionString: 'postgresql://epx@/epx?host=db1,db2,db3&port=5432,5433' }, /3 hosts but 2 ports/)
  refused({ connectionString: 'postgresql://epx@db1,db2/epx?target_session_attrs=read-only' }, /target_session_attrs=read-only is not for epx, which writes/)
})
