/**
 * The inbound request body, as HTTP (DECISIONS.md "Inbound"): `Content-Type` must be
 * application/json (415), and the size limit holds while reading (413: the door then
 * discards the rest within bounds before it closes, `linger.ts`). What the bytes say is
 * the use case's to judge (`apply/receive-programme.ts`).
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { EpxError } from '../errors.ts'
import { withResolvers } from '../with-resolvers.ts'

/** Reads the whole body of a JSON request, at most `maxBytes` of it. */
export function readJsonBody (req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<Buffer> {
  const type = req.headers['content-type'] ?? ''
  // Parameters are allowed (`; charset=utf-8`); the media type is case-insensitive (RFC 9110 §8.3.1).
  const semi = type.indexOf(';')
  if ((semi === -1 ? type : type.slice(0, semi)).trim().toLowerCase() !== 'application/json') {
    return Promise.reject(new EpxError('UNSUPPORTED_MEDIA_TYPE', [type.slice(0, 100)]))
  }
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length'])
  if (declared !== undefined && declared > maxBytes) return Promise.reject(tooLarge(req, res, maxBytes))

  const { promise, resolve, reject } = withResolvers<Buffer>()
  ;(req as Reader)[READING] = { declared, whole: undefined, chunks: [], received: 0, maxBytes, res, resolve, reject }
  req.on('data', onData)
  req.once('end', onEnd)
  req.once('error', onAbort)
  req.once('close', onAbort)
  return promise
}

/**
 * One body being read. The listeners below are shared by every request (`this` is the
 * request): no closures to allocate and name per request, nor to compile again (with-resolvers.ts).
 */
interface Reading {
  readonly declared: number | undefined
  whole: Buffer | undefined
  readonly chunks: Buffer[]
  received: number
  readonly maxBytes: number
  readonly res: ServerResponse
  readonly resolve: (body: Buffer) => void
  readonly reject: (err: unknown) => void
}
// load-bearing: POST 1 × 96 and POST 100 × 96, shared listeners, no closure per request; no figure of its own (bench/README.md#where-post-1--96-goes-e-against-c)
const READING = Symbol('epx.body')
type Reader = IncomingMessage & { [READING]?: Reading }

function finish (req: Reader): Reading {
  const r = req[READING]!
  req[READING] = undefined
  req.off('data', onData)
  req.off('end', onEnd)
  req.off('error', onAbort)
  req.off('close', onAbort)
  return r
}

function onData (this: Reader, chunk: Buffer): void {
  const r = this[READING]
  if (!r) return
  if (r.received + chunk.length > r.maxBytes) {
    finish(this)
    r.reject(tooLarge(this, r.res, r.maxBytes))
    return
  }
  // A body that comes in one chunk is kept as is (a small programme: no copy); a
  // declared length otherwise gets one buffer of that size; a chunked body is gathered.
  if (!r.whole && r.declared !== undefined && r.received === 0 && chunk.length < r.declared) {
    r.whole = Buffer.allocUnsafeSlow(r.declared)
  }
  if (r.whole) chunk.copy(r.whole, r.received)
  else r.chunks.push(chunk)
  r.received += chunk.length
}

function onEnd (this: Reader): void {
  const { whole, chunks, received, resolve } = finish(this)
  if (whole) return resolve(received === whole.length ? whole : whole.subarray(0, received))
  if (chunks.length === 1) return resolve(chunks[0]!)
  const out = Buffer.allocUnsafeSlow(received)
  let at = 0
  for (const c of chunks) at += c.copy(out, at)
  resolve(out)
}

function onAbort (this: Reader): void {
  if (this.complete || !this[READING]) return
  const { received, reject } = finish(this)
  reject(new EpxError('INVALID_PROGRAMME_SOUTIRAGE_REQUEST', ['the body ended early'], {
    details: { '': `the body ended after ${received} bytes, before it was complete` },
  }))
}

/**
 * 413 without keeping the rest: stop pulling from the socket and answer with
 * `Connection: close`. The door then drops the rest of the body, within bounds, and
 * closes (`linger.ts`): a client still uploading gets the 413, not a reset.
 */
function tooLarge (req: IncomingMessage, res: ServerResponse, maxBytes: number): EpxError {
  req.pause()
  res.shouldKeepAlive = false
  return new EpxError('PAYLOAD_TOO_LARGE', [maxBytes], { headers: { connection: 'close' } })
}
