/**
 * The check of an endpoint at registration (DECISIONS.md "Events for BSPs"): `GET
 * <url>?echo=<random>` must answer 200 with that value, which shows the endpoint is the
 * company's and expects epx's deliveries. Through the same checked connection as the
 * deliveries (post-event.ts), so a refused address is refused here first.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { EpxError, isEpxError } from '../errors.ts'
import { inDataDir, type EpxConfig } from '../config.ts'
import { checkEndpointUrl } from './endpoint-address.ts'
import { endpointPool, errorText, type ConnectOptions } from './post-event.ts'

/** The connection options of `webhooks` in the configuration, its CA file read from the data folder. */
export function connectOptionsOf (webhooks: EpxConfig['webhooks'], dataDir: string): ConnectOptions {
  const { allowPrivateNetworks, requestTimeoutMs, caFile } = webhooks
  return { allowPrivateNetworks, requestTimeoutMs, ...(caFile ? { ca: readFileSync(inDataDir(dataDir, caFile), 'utf8') } : {}) }
}

/** The refusal an error carries, itself or as one of its causes. */
function refusalIn (err: unknown): EpxError | undefined {
  for (let e = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    if (isEpxError(e)) return e
  }
  return undefined
}

/** Checks `text` as an endpoint (its form, its addresses, its echo); EPX_WEBHOOK_REFUSED or EPX_WEBHOOK_ECHO_FAILED saying what to fix. */
export async function echoCheck (text: string, connect: ConnectOptions): Promise<URL> {
  const url = checkEndpointUrl(text, connect.allowPrivateNetworks)
  const value = randomBytes(12).toString('base64url')
  const target = new URL(url)
  target.searchParams.set('echo', value)
  const pool = await endpointPool(url, connect)
  try {
    const res = await pool.request({ method: 'GET', path: target.pathname + target.search, headers: { 'user-agent': 'epx-webhooks' }, signal: AbortSignal.timeout(connect.requestTimeoutMs) })
    const body = (await res.body.text()).trim()
    if (res.statusCode !== 200) throw new EpxError('EPX_WEBHOOK_ECHO_FAILED', [text, `it answered ${res.statusCode}`])
    if (body !== value) throw new EpxError('EPX_WEBHOOK_ECHO_FAILED', [text, `it answered 200 with ${JSON.stringify(body.slice(0, 80))}, not the value ${JSON.stringify(value)}`])
    return url
  } catch (err) {
    const refusal = refusalIn(err)
    if (refusal) throw refusal
    const timedOut = err instanceof Error && err.name === 'TimeoutError'
    throw new EpxError('EPX_WEBHOOK_ECHO_FAILED', [text, timedOut ? `no answer within ${connect.requestTimeoutMs} ms (webhooks.requestTimeoutMs)` : `it could not be reached (${errorText(err)})`])
  } finally {
    await pool.destroy().catch(() => {})
  }
}
