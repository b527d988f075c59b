/**
 * Loads the "Besoins agrégés" page: the viewer's sites, the latest revision of the
 * chosen site and day (the very document the API serves, parsed from its stored
 * bytes), the pair's kept revisions, and the effective instruction of that site and
 * day when the viewer may see it.
 * @module
 */
import type { Revisions, RevisionMeta } from '../../store/revisions.ts'
import type { Instructions } from '../../store/instructions.ts'
import type { BesoinsAgreges, BesoinsSite } from '../../contract/besoins-agreges.ts'
import type { Clock, Coverage, Site } from '../../host/contract.ts'
import { addDays, coverageOf, isCalendarDate, parisDateOf } from '../../contract/paris-day.ts'
import { isPrm } from '../../contract/ids.ts'
import { instructionViewsOf, slotConstraints, type InstructionView, type SlotConstraint } from '../../apply/instruction-view.ts'
import { ownCompany, visibleSites, type PerimeterDeps } from '../perimeter.ts'
import type { Viewer } from '../viewer.ts'

export interface BesoinsDeps extends PerimeterDeps {
  readonly revisions: Revisions
  readonly instructions: Instructions
  readonly clock: Clock
}

export interface BesoinsQuery {
  readonly site_id?: string
  readonly target_date?: string
}

export interface BesoinsModel {
  readonly sites: readonly Site[]
  /** Undefined when the viewer has no site at all. */
  readonly site?: Site
  readonly targetDate: string
  readonly coverage: Coverage
  readonly latest?: { readonly meta: RevisionMeta; readonly doc: BesoinsAgreges; readonly site: BesoinsSite }
  /** Kept revisions, newest first. */
  readonly history: readonly RevisionMeta[]
  /** The effective instruction of the site and day, if the viewer may see it. */
  readonly instruction?: { readonly view: InstructionView; readonly constraints: readonly SlotConstraint[] }
}

/** 404 carries no reason: a site outside the perimeter reads as a site that does not exist. */
export type Loaded<T> = { readonly status: 200; readonly model: T } | { readonly status: 400; readonly message: string } | { readonly status: 404 }

/** Tomorrow in Paris by the injected clock: what a BSP looks at (the D+1 publication). */
export function defaultTargetDate (clock: Clock): string {
  return addDays(parisDateOf(clock.now()), 1)
}

/** The site and day a query names, checked against the viewer's perimeter. */
export async function resolvePair (deps: PerimeterDeps & { readonly clock: Clock }, viewer: Viewer, q: BesoinsQuery):
Promise<{ status: 200; sites: Site[]; site?: Site; targetDate: string } | { status: 400; message: string } | { status: 404 }> {
  const targetDate = q.target_date === undefined || q.target_date === '' ? defaultTargetDate(deps.clock) : q.target_date
  if (!isCalendarDate(targetDate)) return { status: 400, message: `Le jour « ${targetDate} » n'est pas une date AAAA-MM-JJ valide.` }
  const sites = await visibleSites(viewer, deps)
  if (q.site_id === undefined || q.site_id === '') return { status: 200, sites, site: sites[0], targetDate }
  if (!isPrm(q.site_id)) return { status: 400, message: `« ${q.site_id} » n'est pas un identifiant de site (PRM suivi de 14 chiffres).` }
  const site = sites.find(s => s.site_id === q.site_id)
  return site ? { status: 200, sites, site, targetDate } : { status: 404 }
}

export async function loadBesoins (deps: BesoinsDeps, viewer: Viewer, q: BesoinsQuery): Promise<Loaded<BesoinsModel>> {
  const pair = await resolvePair(deps, viewer, q)
  if (pair.status !== 200) return pair
  const { sites, site, targetDate } = pair
  const coverage = coverageOf(targetDate)
  if (!site) return { status: 200, model: { sites, targetDate, coverage, history: [] } }
  const history = deps.revisions.list(site.site_id, targetDate).reverse()
  const latest = latestRevision(deps.revisions, site.site_id, targetDate)
  return { status: 200, model: { sites, site, targetDate, coverage, latest, history, instruction: effectiveInstruction(deps, viewer, site.site_id, targetDate) } }
}

/** The latest revision of a site and day, parsed from its stored bytes (the very document the API serves). */
export function latestRevision (revisions: Revisions, siteId: string, targetDate: string): BesoinsModel['latest'] {
  const meta = revisions.latest(siteId, targetDate)
  const bytes = meta && revisions.bytesOf(meta)
  const doc = bytes ? JSON.parse(bytes.toString('utf8')) as BesoinsAgreges : undefined
  const site = doc?.sites.find(s => s.site_id === siteId)
  return meta && doc && site ? { meta, doc, site } : undefined
}

function effectiveInstruction (deps: BesoinsDeps, viewer: Viewer, siteId: string, targetDate: string): BesoinsModel['instruction'] {
  const id = deps.instructions.effectiveId(targetDate, siteId)
  if (id === undefined) return undefined
  // Another company's programme of a shared site is not this member's to read.
  const [view] = instructionViewsOf(deps.instructions, id, { siteIds: [siteId], companyId: ownCompany(viewer) })
  return view && { view, constraints: slotConstraints(view.instruction) }
}

/** The stored bytes of one kept revision of a pair the viewer may see (`emittedAtMs` omitted: the latest). */
export async function loadRevisionBytes (deps: BesoinsDeps, viewer: Viewer, q: BesoinsQuery & { readonly rev?: string }):
Promise<Loaded<{ meta: RevisionMeta; bytes: Buffer }>> {
  if (q.site_id === undefined || q.site_id === '') return { status: 400, message: 'Le paramètre site_id est requis.' }
  const pair = await resolvePair(deps, viewer, q)
  if (pair.status !== 200) return pair
  const { site, targetDate } = pair
  const rev = q.rev === undefined || q.rev === '' ? undefined : Number(q.rev)
  if (rev !== undefined && !Number.isSafeInteger(rev)) return { status: 400, message: `« ${q.rev} » n'est pas un numéro de révision.` }
  const meta = rev === undefined
    ? deps.revisions.latest(site!.site_id, targetDate)
    : deps.revisions.list(site!.site_id, targetDate).find(m => m.emittedAtMs === rev)
  const bytes = meta && deps.revisions.bytesOf(meta)
  return meta && bytes ? { status: 200, model: { meta, bytes } } : { status: 404 }
}
