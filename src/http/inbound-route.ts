/**
 * POST programme-soutirage (contract §4.2) as HTTP, after the door's authentication
 * chain: the body's bytes (415/413) go to the use case (`apply/receive-programme.ts`);
 * its outcome comes back as a 202 with the contract's receipt, or as the catalogue error
 * it carries, which the door renders (`render-error.ts`).
 * @module
 */
import { serializeReceipt } from '../contract/compiled.ts'
import type { Inbound } from '../apply/receive-programme.ts'
import { readJsonBody } from './body.ts'
import { INBOUND_PATH, NOSNIFF, type Route } from './route.ts'

export interface InboundRouteDeps {
  /** `inbound.maxBodyBytes`. */
  readonly maxBodyBytes: number
  readonly inbound: Pick<Inbound, 'receive' | 'refusedAtDoor'>
}

export function inboundRoute (deps: InboundRouteDeps): Route {
  return {
    path: INBOUND_PATH,
    door: 'inbound',
    scope: 'inbound:programme-soutirage',
    methods: {
      async POST (req, res, { caller, receivedAt }) {
        let bytes: Buffer
        try {
          bytes = await readJsonBody(req, res, deps.maxBodyBytes)
        } catch (err) {
          deps.inbound.refusedAtDoor(err, caller, receivedAt)   // 415, 413, a body cut short: a refused programme too
          throw err
        }
        const outcome = await deps.inbound.receive(bytes, caller, receivedAt)
        if (!outcome.accepted) throw outcome.error
        const body = serializeReceipt(outcome.receipt)
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-content-type-options': NOSNIFF })
        res.end(body)
      },
    },
  }
}
