// store.postgres → pg's pool configuration, against a real cluster: the password from a file
// or the environment (SCRAM), never shown; TLS verify-full checking the server's chain and
// its name; the target described for log lines.
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import pg from 'pg'
import { loadConfig } from '../../src/config.ts'
import { issueCert } from '../../src/auth/pki.ts'
import { connectFailure, describeTarget, poolConfig, tlsMode, type PostgresConfig } from '../../src/store/postgres/connect.ts'
import { openStore } from '../../src/store/open-store.ts'
import { postgresStoreOptions } from '../../src/store/postgres/pool-config.ts'
import { startPostgres } from '../../scripts/postgres-cluster.ts'
import { testPki } from '../helpers/certs.ts'

const PASSWORD = 'Tr0ub4dor&3-not-in-any-message'

const postgresConfig = (postgres: object): PostgresConfig =>
  loadConfig({ store: { kind: 'postgres', postgres } }).store.postgres!

// A server certificate naming localhost only (no address): 127.0.0.1 reaches the same server
// under a name its certificate does not carry.
const { serverCa, otherCa } = testPki()
const serverCert = issueCert(serverCa, { subject: 'CN=localhost,O=epx', dnsNames: ['localhost'] })
const cluster = startPostgres({ fsync: 'off' }, { password: PASSWORD, tls: { cert: serverCert.certPem, key: serverCert.keyPem } })
t.teardown(() => cluster.destroy())

/** Connects with the pool configuration, runs one query, and ends the pool; a failure as connectFailure says it. */
async function query (config: PostgresConfig, dataDir: string, env: NodeJS.ProcessEnv = {}): Promise<{ user: string; ssl: boolean }> {
  const pool = new pg.Pool(poolConfig(config, { dataDir, env }))
  try {
    const r = await pool.query<{ user: string; ssl: boolean }>(
      'SELECT current_user AS user, coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false) AS ssl')
    return r.rows[0]!
  } catch (err) {
    throw connectFailure(err, config, { dataDir, env })
  } finally {
    await pool.end()
  }
}

t.test('the password from a file (relative to the data folder) or from an environment variable', async t => {
  const dataDir = t.testdir({ 'pg.password': `${PASSWORD}\n` })
  const socket = { host: cluster.socketDir, port: cluster.port, user: 'postgres', database: 'postgres' }
  t.same(await query(postgresConfig({ ...socket, passwordFile: 'pg.password' }), dataDir), { user: 'postgres', ssl: false },
    'file: its first line; a Unix socket needs no TLS')
  t.same(await query(postgresConfig({ ...socket, passwordEnv: 'EPX_TEST_PG_PASSWORD' }), dataDir, { EPX_TEST_PG_PASSWORD: PASSWORD }), { user: 'postgres', ssl: false })

  writeFileSync(join(dataDir, 'pg.password'), 'rotated\n')
  cluster.psql("ALTER ROLE postgres PASSWORD 'rotated'")
  const rotated = await query(postgresConfig({ ...socket, passwordFile: 'pg.password' }), dataDir).catch((e: unknown) => e)
  const back = new pg.Client({ ...cluster.connection(), password: 'rotated' })
  await back.connect()
  await back.query(`ALTER ROLE postgres PASSWORD '${PASSWORD}'`)
  await back.end()
  t.same(rotated, { user: 'postgres', ssl: false }, 'the file is read at each connection: a rotated password needs no restart')
})

t.test('a wrong or missing password: EPX_STORE_CONNECT_FAILED naming where it came from, never the password', async t => {
  const dataDir = t.testdir({ 'pg.password': 'wrong-password-123\n' })
  const socket = { host: cluster.socketDir, port: cluster.port, user: 'postgres', database: 'postgres' }
  const err = await query(postgresConfig({ ...socket, passwordFile: 'pg.password' }), dataDir).then(() => new Error('connected'), (e: Error) => e)
  t.match(err, {
    code: 'EPX_STORE_CONNECT_FAILED',
    message: /^cannot connect to PostgreSQL \(database postgres on the Unix socket in .* as postgres, no TLS\): password authentication failed for user postgres: check the password in the file .*pg\.password \(store\.postgres\.passwordFile\)$/,
  })
  t.notMatch(err.message, /wrong-password-123|Tr0ub4dor/, 'neither the wrong password nor the right one')

  const envErr = await query(postgresConfig({ ...socket, passwordEnv: 'EPX_TEST_PG_PASSWORD' }), dataDir, { EPX_TEST_PG_PASSWORD: 'env-wrong-456' }).then(() => new Error('connected'), (e: Error) => e)
  t.match(envErr, { code: 'EPX_STORE_CONNECT_FAILED', message: /check the password in the environment variable EPX_TEST_PG_PASSWORD/ })
  t.notMatch(envErr.message, /env-wrong-456/)

  t.match(await query(postgresConfig({ ...socket, passwordEnv: 'EPX_TEST_PG_PASSWORD' }), dataDir, {}).catch(e => e), {
    code: 'EPX_STORE_CONNECT_FAILED', message: /the environment variable EPX_TEST_PG_PASSWORD \(store\.postgres\.passwordEnv\) is not set or empty/,
  })
  t.match(await query(postgresConfig({ ...socket, passwordFile: 'nowhere' }), dataDir).catch(e => e), {
    code: 'EPX_STORE_CONNECT_FAILED', message: /cannot read the password file .*nowhere \(store\.postgres\.passwordFile\): ENOENT/,
  })
  writeFileSync(join(dataDir, 'pg.password'), PASSWORD)
  t.match(await query(postgresConfig({ ...socket, passwordFile: 'pg.password', database: 'nope' }), dataDir).catch(e => e), {
    code: 'EPX_STORE_CONNECT_FAILED', message: /database "nope" does not exist: create it \(createdb\), then run `epx store migrate`/,
  })
})

t.test('a store that cannot connect at open says why, as the CLI and activation report it', async t => {
  const dataDir = t.testdir({ 'pg.password': 'wrong-password-789\n' })
  const config = loadConfig({ store: { kind: 'postgres', postgres: { host: cluster.socketDir, port: cluster.port, user: 'postgres', database: 'postgres', passwordFile: 'pg.password' } } })
  const store = openStore(join(dataDir, 'replica'), { postgres: postgresStoreOptions(config.store, { dataDir })! })
  const err = await store.opened.then(() => new Error('opened'), (e: Error) => e)
  await store.close()
  t.match(err, { code: 'EPX_STORE_CONNECT_FAILED', message: /password authentication failed for user postgres: check the password in the file .*pg\.password/ })
  t.notMatch(err.message, /wrong-password-789/)
})

t.test('nothing listening, a host that does not resolve, a server that never answers: said as such', async t => {
  const dataDir = t.testdir()
  const closed = await new Promise<number>(resolve => { const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address() as AddressInfo; s.close(() => resolve(port)) }) })
  t.match(await query(postgresConfig({ host: '127.0.0.1', port: closed, user: 'epx' }), dataDir).catch(e => e), {
    code: 'EPX_STORE_CONNECT_FAILED', message: new RegExp(`on 127\\.0\\.0\\.1:${closed} as epx, no TLS\\): nothing answers there \\(ECONNREFUSED\\): is the server running, are store\\.postgres host and port right\\?`),
  })
  t.match(await query(postgresConfig({ host: 'db.epx-test.invalid', user: 'epx', tls: { mode: 'disable' } }), dataDir).catch(e => e), {
    code: 'EPX_STORE_CONNECT_FAILED', message: /the host name db\.epx-test\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN)\)/,
  })
  // A server that takes the connection and never answers (a host gone silent).
  const silent = createServer(() => {}).listen(0, '127.0.0.1')
  await new Promise(resolve => silent.once('listening', resolve))
  t.teardown(() => { silent.close() })
  const started = Date.now()
  t.match(await query(postgresConfig({ host: '127.0.0.1', port: (silent.address() as AddressInfo).port, user: 'epx', connectTimeoutMs: 300 }), dataDir).catch(e => e), {
    code: 'EPX_STORE_CONNECT_FAILED', message: /no connection within 300 ms \(store\.postgres\.connectTimeoutMs\): is the host reachable\?/,
  })
  t.ok(Date.now() - started < 5000, 'given up after connectTimeoutMs, not the system\'s TCP timeout')
})

t.test('TLS verify-full: the server must chain to caFile and its certificate name the host', async t => {
  const dataDir = t.testdir({ 'pg.password': PASSWORD, 'server-ca.crt': serverCa.certPem, 'other-ca.crt': otherCa.certPem })
  const tcp = { port: cluster.tcp!.port, user: 'postgres', database: 'postgres', passwordFile: 'pg.password' }

  t.same(await query(postgresConfig({ ...tcp, host: 'localhost', tls: { mode: 'verify-full', caFile: 'server-ca.crt' } }), dataDir),
    { user: 'postgres', ssl: true }, 'the right CA and the name on the certificate: connected, over TLS')

  const wrongCa = await query(postgresConfig({ ...tcp, host: 'localhost', tls: { mode: 'verify-full', caFile: 'other-ca.crt' } }), dataDir).catch(e => e)
  t.match(wrongCa, {
    code: 'EPX_STORE_CONNECT_FAILED',
    message: /\(database postgres on localhost:\d+ as postgres, TLS verify-full\): the server's certificate does not chain to a trusted CA: set store\.postgres\.tls\.caFile to the CA that signed it/,
  }, 'a CA that did not sign it: refused, saying what to set')

  const wrongName = await query(postgresConfig({ ...tcp, host: '127.0.0.1', tls: { mode: 'verify-full', caFile: 'server-ca.crt' } }), dataDir).catch(e => e)
  t.match(wrongName, { code: 'EPX_STORE_CONNECT_FAILED', message: /does not name the host connected to.*ERR_TLS_CERT_ALTNAME_INVALID/ },
    'the right CA, but an address the certificate does not name: refused')

  t.same(await query(postgresConfig({ ...tcp, host: '127.0.0.1', tls: { mode: 'require' } }), dataDir), { user: 'postgres', ssl: true },
    'require: encrypted, the certificate not checked')
  t.same(await query(postgresConfig({ ...tcp, host: '127.0.0.1' }), dataDir), { user: 'postgres', ssl: false },
    'a loopback host needs no TLS by default')
})

t.test('hosts with TLS verify-full: each member is checked against its own name', async t => {
  const dataDir = t.testdir({ 'pg.password': PASSWORD, 'server-ca.crt': serverCa.certPem })
  const port = cluster.tcp!.port
  const settings = { user: 'postgres', database: 'postgres', passwordFile: 'pg.password', tls: { mode: 'verify-full', caFile: 'server-ca.crt' } }
  // One server under two names: the address its certificate does not carry, then the name it does.
  t.same(await query(postgresConfig({ ...settings, hosts: [`127.0.0.1:${port}`, `localhost:${port}`] }), dataDir), { user: 'postgres', ssl: true },
    'the member whose name the certificate carries is taken')
  const err = await query(postgresConfig({ ...settings, hosts: [`127.0.0.1:${port}`] }), dataDir).catch(e => e)
  t.match(err, {
    code: 'EPX_STORE_CONNECT_FAILED',
    message: new RegExp(`no member accepts writes: 127\\.0\\.0\\.1:${port}: the server's certificate does not name the host connected to.*ERR_TLS_CERT_ALTNAME_INVALID`),
  }, 'the other is refused, saying which and why')
  t.notMatch(err.message, new RegExp(PASSWORD))
})

t.test('the target as log lines say it, and the TLS mode each host gets by default', async t => {
  const remote = postgresConfig({ connectionString: 'postgresql://epx@db.example.net:6432/epx?application_name=epx-a', passwordEnv: 'PGPW' })
  t.equal(describeTarget(remote), 'database epx on db.example.net:6432 as epx, TLS verify-full')
  t.equal(tlsMode(remote), 'verify-full', 'off loopback: verify-full')
  const cfg = poolConfig(remote, { dataDir: '/nowhere', env: { PGPW: PASSWORD } })
  t.match(cfg, { host: 'db.example.net', port: 6432, database: 'epx', user: 'epx', application_name: 'epx-a', max: 4, statement_timeout: 5000, connectionTimeoutMillis: 5000 })
  t.equal((cfg.password as () => string)(), PASSWORD, 'read when a connection asks for it')
  t.notMatch(JSON.stringify(cfg), new RegExp(PASSWORD), 'and not held as text in the configuration')
  t.equal(describeTarget(postgresConfig({ host: '::1', database: 'epx', user: 'epx' })), 'database epx on [::1]:5432 as epx, no TLS')
  t.equal(tlsMode(postgresConfig({ host: '127.0.0.2' })), 'disable')
  t.equal(tlsMode(postgresConfig({ host: '/var/run/postgresql' })), 'disable')
  t.equal(tlsMode(postgresConfig({ host: '10.0.0.5', tls: { mode: 'require' } })), 'require', 'the configured mode wins')
  const cluster2 = postgresConfig({ hosts: ['db1.example.net', 'db2.example.net:6432', '[2001:db8::7]:5433'], database: 'epx', user: 'epx' })
  t.equal(describeTarget(cluster2), 'database epx on the member accepting writes of db1.example.net:5432, db2.example.net:6432, [2001:db8::7]:5433 as epx, TLS verify-full')
  t.match(poolConfig(cluster2, { dataDir: '/nowhere' }), { host: 'db1.example.net', port: 5432, Client: Function, connectionTimeoutMillis: 5000 * 2 * 3 },
    'a client class that looks for the primary; the pool bounds the whole search')
  t.equal(poolConfig(remote, { dataDir: '/nowhere' }).Client, undefined, 'one host: pg\'s own client')
  const listed = postgresConfig({ connectionString: 'postgresql://epx@db1.example.net,db2.example.net:6432/epx?target_session_attrs=read-write' })
  t.equal(describeTarget(listed), 'database epx on the member accepting writes of db1.example.net:5432, db2.example.net:6432 as epx, TLS verify-full',
    'a connection string listing several hosts, as libpq writes it')
  t.notOk('target_session_attrs' in poolConfig(listed, { dataDir: '/nowhere' }), 'read-write is how epx connects to them anyway')
  t.equal(tlsMode(postgresConfig({ hosts: ['127.0.0.1:5432', '/var/run/postgresql'] })), 'disable', 'every member on loopback or a socket: no TLS')
  t.equal(tlsMode(postgresConfig({ hosts: ['127.0.0.1:5432', 'db.example.net'] })), 'verify-full', 'one off loopback: verify-full for all')
  t.throws(() => poolConfig(postgresConfig({ host: 'db.example.net', tls: { caFile: 'missing-ca.crt' } }), { dataDir: t.testdir() }), {
    code: 'EPX_STORE_CONNECT_FAILED', message: /cannot read store\.postgres\.tls\.caFile .*missing-ca\.crt: ENOENT/,
  })
})
