import t from 'tap'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { catalogue, EpxError, isEpxError, NO_CREDENTIALS_HEADERS, type ErrorSpec } from '../src/errors.ts'

// fastify's test/internals/errors.test.js idea: the catalogue and its documentation
// cannot drift apart unnoticed.
const doc = readFileSync(resolve(import.meta.dirname, '../docs/errors.md'), 'utf8')
// Rows `| CODE | status | exit | ...`, with `–` where a door does not apply.
const number = (cell: string) => cell === '–' ? undefined : Number(cell)
const documented = new Map([...doc.matchAll(/^\| ([A-Z][A-Z0-9_]+) \| (\d+|–) \| (\d+|–) \|/gm)]
  .map(m => [m[1]!, { status: number(m[2]!), exit: number(m[3]!) }]))

t.test('every catalogue code is documented in docs/errors.md with its HTTP status and its exit code', async t => {
  for (const [code, spec] of Object.entries(catalogue) as Array<[string, ErrorSpec]>) {
    t.same(documented.get(code), { status: spec.status, exit: spec.exit }, code)
  }
})

t.test('wire codes have an HTTP status, operator codes none; every operator code has an exit code (usage 2, else 1)', async t => {
  for (const [code, spec] of Object.entries(catalogue) as Array<[string, ErrorSpec]>) {
    if (!code.startsWith('EPX_')) {
      t.ok(spec.status !== undefined && spec.status >= 400 && spec.status <= 599, `${code}: an HTTP status`)
      continue
    }
    t.equal(spec.status, undefined, `${code}: no HTTP status`)
    t.equal(spec.exit, code === 'EPX_USAGE' ? 2 : 1, `${code}: its exit code`)
  }
})

t.test('docs/errors.md documents no code the catalogue lacks', async t => {
  t.same([...documented.keys()].filter(c => !Object.hasOwn(catalogue, c)), [])
})

t.test('wire codes that leave through problem+json have a slug and a title, and their help in English and in French, one line each', async t => {
  for (const [code, spec] of Object.entries(catalogue) as Array<[string, ErrorSpec]>) {
    if (code.startsWith('EPX_')) {
      t.equal(spec.help, undefined, `${code}: an operator code has no page`)
      continue
    }
    t.ok('slug' in spec && 'title' in spec, code)
    for (const lang of ['en', 'fr'] as const) t.match(spec.help?.[lang], /^[^\n]{10,}$/, `${code}: help.${lang}`)
  }
})

t.test('an EpxError renders its template and is recognised by its code, not its class', async t => {
  const e = new EpxError('SCOPE_DENIED', ['inbound:programme-soutirage'])
  t.equal(e.status, 403)
  t.equal(e.message, "token lacks scope 'inbound:programme-soutirage'")
  t.ok(isEpxError(e))
  t.ok(isEpxError({ code: 'NO_STORE', message: 'from another copy of epx' }), 'a plain object with a known code')
  t.notOk(isEpxError({ code: 'ECONNRESET' }), 'a node error code is not ours')
  t.notOk(isEpxError(null))
})

t.test('the headers a code always carries come with it from the catalogue, whoever throws it; the thrower\'s win', async t => {
  t.same(new EpxError('NO_STORE').headers, { 'retry-after': '5' })
  t.same(new EpxError('NOT_PUBLISHED', ['PRM00000000000001', '2026-11-22']).headers, { 'retry-after': '300' })
  t.same(new EpxError('UNAUTHORIZED', ['x']).headers, { 'www-authenticate': 'Bearer realm="epx", error="invalid_token"' }, 'a token was sent: invalid_token')
  t.same(NO_CREDENTIALS_HEADERS, { 'www-authenticate': 'Bearer realm="epx"' }, 'nothing was sent: no error parameter (RFC 6750 §3.1)')
  t.same(new EpxError('UNAUTHORIZED', ['x'], { headers: NO_CREDENTIALS_HEADERS }).headers, NO_CREDENTIALS_HEADERS)
  t.same(new EpxError('SCOPE_DENIED', ['inbound:programme-soutirage']).headers,
    { 'www-authenticate': 'Bearer realm="epx", error="insufficient_scope", scope="inbound:programme-soutirage"' }, 'the scope needed, from the arguments')
  t.same(new EpxError('METHOD_NOT_ALLOWED', ['PUT', 'GET, HEAD']).headers, { allow: 'GET, HEAD' })
  t.same(new EpxError('NO_STORE', [], { headers: { 'retry-after': '7' } }).headers, { 'retry-after': '7' })
  t.equal(new EpxError('UNKNOWN_PATH', ['/x']).headers, undefined, 'a code without headers carries none')
})
