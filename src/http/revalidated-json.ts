/**
 * A JSON read that changes as its subject does (a programme's status with each solver
 * cycle, a day's realisation with each meter value): `private, no-cache`, so a client
 * revalidates every time and gets 304 while the weak ETag of the body is unchanged
 * (RFC 9110 §13, DECISIONS.md "Reading outcomes").
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isNotModified } from './conditional.ts'
import { NOSNIFF } from './route.ts'

const CACHE_CONTROL = 'private, no-cache'

/**
 * Answers 304 when If-None-Match holds `etag`, else 200 with `body` (none for HEAD); bytes
 * made beforehand (a kept answer) are written as they are.
 */
export function sendRevalidatedJson (req: IncomingMessage, res: ServerResponse, body: string | Buffer, etag: string, head: boolean): void {
  if (isNotModified({ ifNoneMatch: req.headers['if-none-match'] }, { etag, lastModifiedMs: NaN })) {
    res.writeHead(304, { etag, 'cache-control': CACHE_CONTROL, 'x-content-type-options': NOSNIFF })
    res.end()
    return
  }
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
    etag,
    'cache-control': CACHE_CONTROL,
    'x-content-type-options': NOSNIFF,
  })
  res.end(head ? undefined : body)
}
