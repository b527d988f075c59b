/**
 * POST programme-soutirage (contract §4.2), after the door's authentication chain:
 * body (415/413/400) → batch (400 with every pointer) → persisted and queued (503
 * NO_STORE when the store fails) → 202 with the contract's receipt.
 * @module
 */
import type { InstructionBatch } from '../contract/instruction.ts'
import { serializeReceipt, type Receipt } from '../contract/compiled.ts'
import { readJsonBody } from './body.ts'
import type { ProgrammeReader } from './read-programme.ts'
import { INBOUND_PATH, NOSNIFF, type Route } from './route.ts'

export interface InboundDeps {
  /** `inbound.maxBodyBytes`. */
  readonly maxBodyBytes: number
  readonly reader: ProgrammeReader
  /** The use case (`apply/receive-programme.ts`), bound to its store and solver. */
  readonly receive: (batch: InstructionBatch, receivedAt: string) => Promise<Receipt>
}

export function inboundRoute (deps: InboundDeps): Route {
  return {
    path: INBOUND_PATH,
    door: 'inbound',
    scope: 'inbound:programme-soutirage',
    methods: {
      async POST (req, res, { caller, receivedAt }) {
        const bytes = await readJsonBody(req, res, deps.maxBodyBytes)
        const at = receivedAt.toISOString()
        const batch = await deps.reader.read(bytes, {
          perimeter: caller.perimeter,
          provenance: {
            receivedAt: at,
            companyId: caller.companyId,
            tokenId: caller.tokenId,
            certFingerprint256: caller.certFingerprint256,
          },
        })
        const body = serializeReceipt(await deps.receive(batch, at))
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-content-type-options': NOSNIFF })
        res.end(body)
      },
    },
  }
}
