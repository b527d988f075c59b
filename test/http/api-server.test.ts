import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { ApiResponse, RATE_LIMIT } from '../../src/http/api-server.ts'

// The API's response: every head its handler writes carries the caller's budget
// (DECISIONS.md "Rate limits and quotas"), whichever form of writeHead the handler uses,
// and node's own checks of the fields still run.

type Handler = (res: ApiResponse) => void

async function answer (t: Test, handler: Handler, limit: readonly [string, string] | null = ['"get";q=50;w=10', 'r=49;t=1']) {
  const server = createServer({ ServerResponse: ApiResponse as unknown as typeof ServerResponse }, (_req: IncomingMessage, res: ServerResponse) => {
    const r = res as ApiResponse
    r[RATE_LIMIT] = limit ?? undefined
    try {
      handler(r)
    } catch (err) {
      r[RATE_LIMIT] = undefined
      r.writeHead(500, { 'x-error': (err as { code?: string }).code ?? 'none' })
      r.end()
    }
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  const { port } = server.address() as AddressInfo
  const res = await request(`http://127.0.0.1:${port}/`)
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() }
}

const BUDGET = { 'ratelimit-policy': '"get";q=50;w=10', ratelimit: 'r=49;t=1' }

t.test('writeHead(status, object): the handler\'s fields and the budget', async t => {
  const a = await answer(t, res => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 }); res.end('{}') })
  t.equal(a.status, 200)
  t.match(a.headers, { 'content-type': 'application/json', 'content-length': '2', ...BUDGET })
  t.equal(a.body, '{}')
})

t.test('writeHead(status, reason, object), a flat list, [name, value] pairs and the status alone', async t => {
  const reason = await answer(t, res => { res.writeHead(304, 'Not Modified', { etag: '"a"' }); res.end() })
  t.match(reason, { status: 304, headers: { etag: '"a"', ...BUDGET } })
  const flat = await answer(t, res => { res.writeHead(200, ['etag', '"b"', 'x-two', ['1', '2']]); res.end() })
  t.match(flat.headers, { etag: '"b"', 'x-two': ['1', '2'], ...BUDGET })
  const pairs = await answer(t, res => { res.writeHead(200, [['etag', '"c"']]); res.end() })
  t.match(pairs.headers, { etag: '"c"', ...BUDGET })
  const alone = await answer(t, res => { res.statusCode = 202; res.end('ok') })
  t.match(alone, { status: 202, headers: BUDGET, body: 'ok' }, 'an implicit head (end without writeHead) too')
})

t.test('fields set before writeHead are kept beside the budget', async t => {
  const a = await answer(t, res => { res.setHeader('x-set', 'early'); res.writeHead(200, { etag: '"d"' }); res.end() })
  t.match(a.headers, { 'x-set': 'early', etag: '"d"', ...BUDGET })
})

t.test('without a budget the head is the handler\'s alone', async t => {
  const a = await answer(t, res => { res.writeHead(200, { etag: '"e"' }); res.end() }, null)
  t.equal(a.headers.etag, '"e"')
  t.notOk('ratelimit' in a.headers)
  t.notOk('ratelimit-policy' in a.headers)
})

t.test('node still refuses a field value it would refuse anyway', async t => {
  const a = await answer(t, res => { res.writeHead(200, { 'x-bad': 'a\r\nb' }); res.end() })
  t.equal(a.status, 500)
  t.equal(a.headers['x-error'], 'ERR_INVALID_CHAR')
  t.notOk('ratelimit' in a.headers, 'the error\'s head, with the budget cleared, carries none')
})
