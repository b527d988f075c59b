/**
 * POST programme-soutirage (contract §4.2), after the door's authentication chain:
 * body (415/413/400) → batch (400 with every pointer) → persisted and queued (503
 * NO_STORE when the store fails) → 202 with the contract's receipt.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { InstructionBatch } from '../contract/instruction.ts'
import { serializeReceipt, type Receipt } from '../contract/compiled.ts'
import { readJsonBody } from './body.ts'
import type { ProgrammeReader } from './read-programme.ts'
import type { ProgrammeOutcome } from '../apply/audit-events.ts'
import { INBOUND_PATH, NOSNIFF, type RequestContext, type Route } from './route.ts'

export interface InboundDeps {
  /** `inbound.maxBodyBytes`. */
  readonly maxBodyBytes: number
  readonly reader: ProgrammeReader
  /** The use case (`apply/receive-programme.ts`), bound to its store and solver. */
  readonly receive: (batch: InstructionBatch, receivedAt: string) => Promise<Receipt>
  /** Told once per programme, once its answer is decided (plugin.ts: audit, metrics, feasibility). */
  readonly observe?: (outcome: ProgrammeOutcome) => void
}

export function inboundRoute (deps: InboundDeps): Route {
  return {
    path: INBOUND_PATH,
    door: 'inbound',
    scope: 'inbound:programme-soutirage',
    methods: {
      POST: (req, res, ctx) => accept(req, res, ctx).then(
        ({ batch, bytes }) => deps.observe?.({ accepted: true, caller: ctx.caller, at: ctx.receivedAt, batch, bytes }),
        (error: unknown) => { deps.observe?.({ accepted: false, caller: ctx.caller, at: ctx.receivedAt, error }); throw error }),
    },
  }

  async function accept (req: IncomingMessage, res: ServerResponse, { caller, receivedAt }: RequestContext): Promise<{ batch: InstructionBatch; bytes: number }> {
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
    return { batch, bytes: bytes.length }
  }
}
