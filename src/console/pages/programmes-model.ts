/**
 * Loads the "Programmes" page: received instructions of a day (optionally one site)
 * and one instruction's slots, with the rules `epx instructions list|show` uses
 * (`apply/instruction-view.ts`). A member sees the programmes its company sent, and
 * nothing of another company's, not even the id of one that superseded its own.
 * @module
 */
import type { Instructions } from '../../store/instructions.ts'
import type { InForceSpan } from '../../store/in-force.ts'
import type { Clock, Site } from '../../host/contract.ts'
import {
  instructionViewsOf, listInstructionViews, slotConstraints, type InstructionView, type SlotConstraint,
} from '../../apply/instruction-view.ts'
import { isPrm } from '../../contract/ids.ts'
import { ownCompany, type PerimeterDeps } from '../perimeter.ts'
import type { Viewer } from '../viewer.ts'
import type { FeasibilityFlag, InstructionFlags } from '../../store/instruction-flags.ts'
import { resolvePair, type Loaded } from './besoins-model.ts'
import { realisation, type RealisationDeps, type RealiseBody } from '../../apply/realisation.ts'
import type { Revisions } from '../../store/revisions.ts'
import { checkOf, type FeasibilityCheck } from './feasibility.ts'

export interface ProgrammesDeps extends PerimeterDeps {
  readonly instructions: Instructions
  readonly clock: Clock
  /** The feasibility flags stored with each instruction (what `epx instructions show` reports). */
  readonly flags?: Pick<InstructionFlags, 'get'>
  /** Programme against delivery (`apply/realisation.ts`). */
  readonly realisation?: RealisationDeps
  /** The published needs, to tell a checked instruction from one with nothing to check against (`feasibility.ts`). */
  readonly revisions?: Pick<Revisions, 'list'>
}

/** An instruction as the pages show it: with its feasibility flag when it has one, its check, and its company's name. */
export type FlaggedView = InstructionView & {
  readonly feasibility?: FeasibilityFlag
  readonly check?: FeasibilityCheck
  readonly companyName?: string
}

export interface ProgrammesModel {
  readonly sites: readonly Site[]
  /** The site the list is limited to; undefined: every site. */
  readonly siteId?: string
  readonly targetDate: string
  readonly views: readonly FlaggedView[]
}

export interface ProgrammeModel {
  readonly view: FlaggedView
  readonly constraints: readonly SlotConstraint[]
  /** The site's day programmed against delivered, when meter values or this instruction in force give one. */
  readonly realisation?: RealiseBody
  /** When this instruction was in force (`store/in-force.ts`); undefined: not told. */
  readonly inForce?: readonly InForceSpan[]
}

export async function loadProgrammes (deps: ProgrammesDeps, viewer: Viewer, q: { site_id?: string; target_date?: string }): Promise<Loaded<ProgrammesModel>> {
  // Same site and day rules as the "Besoins agrégés" page; no site named means all of them.
  const pair = await resolvePair(deps, viewer, q)
  if (pair.status !== 200) return pair
  const siteId = q.site_id ? pair.site!.site_id : undefined
  const company = ownCompany(viewer)
  const views = listInstructionViews(deps.instructions, {
    targetDate: pair.targetDate, siteIds: siteId === undefined ? undefined : [siteId], companyId: company,
  }).map(v => flagged(deps, redact(v, company)))
  return { status: 200, model: { sites: pair.sites, siteId, targetDate: pair.targetDate, views } }
}

export function loadProgramme (deps: ProgrammesDeps, viewer: Viewer, instructionId: string, siteId: string): Loaded<ProgrammeModel> {
  if (!isPrm(siteId)) return { status: 404 }
  const company = ownCompany(viewer)
  const [view] = instructionViewsOf(deps.instructions, instructionId, { siteIds: [siteId], companyId: company })
  if (!view) return { status: 404 }
  const realised = deps.realisation && realisation(deps.realisation, view.instruction.targetDate, siteId, company)
  // Its own spans only: when another's began says nothing of whose it was.
  const inForce = deps.instructions.inForce.spansOf(view.instruction.targetDate, siteId).filter(s => s.instructionId === instructionId)
  return { status: 200, model: { view: flagged(deps, redact(view, company)), constraints: slotConstraints(view.instruction), inForce, ...(realised ? { realisation: realised } : {}) } }
}

function flagged (deps: ProgrammesDeps, v: InstructionView): FlaggedView {
  const feasibility = deps.flags?.get(v.instruction.instructionId, v.instruction.siteId)
  const check = checkOf(feasibility, deps.revisions, v.instruction)
  const companyName = deps.companies.get(v.instruction.companyId)?.name
  return { ...v, ...(feasibility ? { feasibility } : {}), ...(check ? { check } : {}), ...(companyName !== undefined ? { companyName } : {}) }
}

/** Drops the superseder's id when another company sent it. */
function redact (v: InstructionView, company: string | undefined): InstructionView {
  if (company === undefined || v.supersededBy === undefined || v.supersededBy.companyId === company) return v
  return { instruction: v.instruction }
}
