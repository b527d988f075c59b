/**
 * Server B, what a user would pick instead: the Fastify peer (fastify-peer.ts) with no
 * persistence.
 * @module
 */
import { failStart } from './harness.ts'
import { startFastifyPeer } from './fastify-peer.ts'

startFastifyPeer('B').catch(err => failStart('B', err))
