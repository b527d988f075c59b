/**
 * Lingering close (RFC 9112 §9.6) of a connection whose request body was refused before
 * it was read (401, 403, 413, 415). Closing at once, with the
 * client's upload still arriving, makes the kernel answer that data with a reset, and
 * a client that writes its whole body before reading (Python's http.client, most Java
 * clients) then gets a transport error instead of the refusal. So the door half-closes
 * after the refusal (close_notify and FIN follow the answer) and reads and discards the
 * rest of the body before the full close, within two bounds:
 *
 * - bytes: at most `lingerMaxBytes(maxBodyBytes)` more bytes of body are read;
 * - time: the connection is closed `LINGER_MS` after the refusal at the latest.
 *
 * Neither bound lets a client make the door read without end: discarded bytes are
 * never kept (no memory), one connection costs at most that many bytes and seconds, and
 * `api.maxConnections` caps the connections. A body beyond the bound is cut, as before.
 * @module
 */
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

/** Longest a refused connection stays open to take the rest of its body. */
export const LINGER_MS = 5000

/**
 * Fewest bytes a refused body may still send: a 413 for a body a few times over a small
 * configured limit must still reach the client.
 */
const LINGER_MIN_BYTES = 16 * 1024 * 1024

/** Most bytes of a refused body read and dropped: the inbound limit, at least 16 MiB. */
export function lingerMaxBytes (maxBodyBytes: number): number {
  return Math.max(maxBodyBytes, LINGER_MIN_BYTES)
}

/** Sockets closing after a refusal: a request pipelined behind it is not served. */
const lingering = new WeakSet<Socket>()

export function isLingering (socket: Socket): boolean {
  return lingering.has(socket)
}

/**
 * Call before a refusal is sent with `Connection: close` while the request body is
 * unread. The body is counted and dropped from now on (node would otherwise drop it
 * unseen, past any bound). node ends such an exchange with `socket.destroySoon()` (end,
 * then destroy as soon as the answer is written); for this socket that becomes the
 * lingering close.
 */
export function lingerAfterRefusal (req: IncomingMessage, maxBytes: number, maxMs = LINGER_MS): void {
  const socket = req.socket as Socket & { destroySoon?: () => void }
  if (socket.destroyed || lingering.has(socket)) return
  lingering.add(socket)
  let discarded = 0
  let closing = false
  let timer: NodeJS.Timeout | undefined
  const stop = () => {
    clearTimeout(timer)
    req.off('data', onData)
    req.off('end', onEnd)
    socket.off('end', close)
    socket.off('close', stop)
  }
  function close (): void {
    stop()
    socket.destroy()
  }
  function onData (chunk: Buffer): void {
    discarded += chunk.length
    if (closing && discarded > maxBytes) close()
  }
  function onEnd (): void {
    if (closing) close()   // the whole body has been read: nothing left to reset
  }
  socket.once('close', stop)
  req.on('data', onData)   // also keeps node from dumping the body where it cannot be counted
  req.once('end', onEnd)
  req.resume()             // body.ts pauses a request it refused mid-read

  socket.destroySoon = () => {
    closing = true
    timer = setTimeout(close, maxMs)
    timer.unref()
    // Half-close: the answer, then close_notify and FIN; what the client sends still comes in.
    socket.end()
    if (req.readableEnded || discarded > maxBytes) return close()
    socket.once('end', close)   // the client closed its side
  }
}
