/**
 * node:http's values, required rather than imported. An ES import of a built-in builds its
 * namespace from every export, and node:http's include lazy getters (`WebSocket`,
 * `CloseEvent`, `MessageEvent`, Node 22 and later) that load Node's whole bundled undici:
 * ~70 ms of CPU in a fresh process, ~40 ms at each start of the door's thread, for names
 * epx never reads. `require` returns the module object and reads none of them.
 * The API door (http/), the metrics listener (metrics/) and `epx bsp receive` (cli/) use it.
 * @module
 */
import type { IncomingMessage } from 'node:http'
import { createRequire } from 'node:module'

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http')

export const { createServer, ServerResponse } = http
/** The class's type beside its value, as node:http's own import gives both. */
export type ServerResponse<R extends IncomingMessage = IncomingMessage> = import('node:http').ServerResponse<R>
