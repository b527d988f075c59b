/**
 * Loads one instruction's page: its slots, with the rules `epx instructions list|show` uses
 * (`apply/instruction-view.ts`). A member sees the programmes its company sent, and
 * nothing of another company's, not even the id of one that superseded its own.
 * @module
 */
import type { Instructions } from '../../store/instructions.ts'
import type { Revisions } from '../../store/revisions.ts'
import type { BesoinsSite } from '../../contract/besoins-agreges.ts'
import type { InForceSpan } from '../../store/in-force.ts'
import type { Clock } from '../../host/contract.ts'
import {
  instructionViewsOf, slotConstraints, type InstructionView, type SlotConstraint,
} from '../../apply/instruction-view.ts'
import { isPrm } from '../../contract/ids.ts'
import { ownCompany, seesSite, type PerimeterDeps } from '../perimeter.ts'
import type { Viewer } from '../viewer.ts'
import type { FeasibilityFlag, InstructionFlags } from '../../store/instruction-flags.ts'
import { latestRevision, type Loaded } from './besoins-model.ts'
import { realisation, type RealisationDeps, type RealiseBody } from '../../apply/realisation.ts'
import { checkOf, type FeasibilityCheck } from './feasibility.ts'

export interface ProgrammesDeps extends PerimeterDeps {
  readonly instructions: Instructions
  readonly clock: Clock
  /** The feasibility flags stored with each instruction (what `epx instructions show` reports). */
  readonly flags?: Pick<InstructionFlags, 'get'>
  /** Programme against delivery (`apply/realisation.ts`). */
  readonly realisation?: RealisationDeps
  /**
   * The published Besoins: drawn under a programme on its page, and what tells a checked
   * instruction from one with nothing to check against (`feasibility.ts`).
   */
  readonly revisions?: Revisions
}

/** An instruction as the pages show it: with its feasibility flag when it has one, its check, and its company's name. */
export type FlaggedView = InstructionView & {
  readonly feasibility?: FeasibilityFlag
  readonly check?: FeasibilityCheck
  readonly companyName?: string
}

export interface ProgrammeModel {
  readonly view: FlaggedView
  readonly constraints: readonly SlotConstraint[]
  /** The site's day programmed against delivered, when meter values or this instruction in force give one. */
  readonly realisation?: RealiseBody
  /** When this instruction was in force (`store/in-force.ts`); undefined: not told. */
  readonly inForce?: readonly InForceSpan[]
  /** The latest Besoins published for the site and day, when there is one. */
  readonly besoins?: BesoinsSite
}

export function loadProgramme (deps: ProgrammesDeps, viewer: Viewer, instructionId: string, siteId: string): Loaded<ProgrammeModel> {
  if (!isPrm(siteId)) return { status: 404 }
  const company = ownCompany(viewer)
  const [view] = instructionViewsOf(deps.instructions, instructionId, { siteIds: [siteId], companyId: company })
  if (!view) return { status: 404 }
  const realised = deps.realisation && realisation(deps.realisation, view.instruction.targetDate, siteId, company)
  // Its own spans only: when another's began says nothing of whose it was.
  const inForce = deps.instructions.inForce.spansOf(view.instruction.targetDate, siteId).filter(s => s.instructionId === instructionId)
  // The Besoins are the site's current holder's: drawn only while the site is in the viewer's perimeter.
  const besoins = deps.revisions && seesSite(viewer, deps, siteId) ? latestRevision(deps.revisions, siteId, view.instruction.targetDate)?.site : undefined
  return { status: 200, model: { view: flagged(deps, redact(view, company)), constraints: slotConstraints(view.instruction), inForce, ...(realised ? { realisation: realised } : {}), ...(besoins ? { besoins } : {}) } }
}

function flagged (deps: ProgrammesDeps, v: InstructionView): FlaggedView {
  const feasibility = deps.flags?.get(v.instruction.instructionId, v.instruction.siteId)
  const check = checkOf(feasibility, deps.revisions, v.instruction)
  const companyName = deps.companies.get(v.instruction.companyId)?.name
  return { ...v, ...(feasibility ? { feasibility } : {}), ...(check ? { check } : {}), ...(companyName !== undefined ? { companyName } : {}) }
}

/** Drops the superseder's id when another company sent it. */
export function redact<T extends { readonly supersededBy?: { readonly companyId: string } }> (v: T, company: string | undefined): T {
  if (company === undefined || v.supersededBy === undefined || v.supersededBy.companyId === company) return v
  const { supersededBy: _, ...rest } = v
  return rest as T
}
