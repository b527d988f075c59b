/**
 * The URLs of the "Besoins agrégés" and "Programmes" pages, in one place: the pages
 * link to each other, and the core's navigation links to them.
 * @module
 */
import type { RevisionMeta } from '../../store/revisions.ts'

export const BESOINS_PATH = '/besoins-agreges'
export const DOWNLOAD_PATH = '/besoins-agreges/download'
export const PROGRAMMES_PATH = '/programmes'

/** The page of a site and day; the query names are the API's (`site_id`, `target_date`). */
export function besoinsHref (siteId: string, targetDate: string): string {
  return `${BESOINS_PATH}?${new URLSearchParams({ site_id: siteId, target_date: targetDate })}`
}

/** The download of one revision (`rev` is its emitted_at in ms), or of the latest. */
export function downloadHref (siteId: string, targetDate: string, meta?: RevisionMeta): string {
  const q = new URLSearchParams({ site_id: siteId, target_date: targetDate })
  if (meta) q.set('rev', String(meta.emittedAtMs))
  return `${DOWNLOAD_PATH}?${q}`
}

export function programmeHref (instructionId: string, siteId: string): string {
  return `${PROGRAMMES_PATH}/${encodeURIComponent(instructionId)}/${encodeURIComponent(siteId)}`
}

export function programmesHref (targetDate: string, siteId?: string): string {
  const q = new URLSearchParams({ target_date: targetDate })
  if (siteId) q.set('site_id', siteId)
  return `${PROGRAMMES_PATH}?${q}`
}

/** The list with its filters, sort and page (`programmes-list.ts`): empty values are left out, so a shared URL stays short. */
export function programmesListHref (params: Readonly<Record<string, string | undefined>>): string {
  return `${PROGRAMMES_PATH}?${queryOf(params)}`
}

/** Query text of the set values, in the order given. */
export function queryOf (params: Readonly<Record<string, string | undefined>>): URLSearchParams {
  return new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''))
}

export const REALISE_PATH = '/realise'
export const REALISE_DOWNLOAD_PATH = '/realise/download'

export function realiseHref (targetDate: string): string {
  return `${REALISE_PATH}?${new URLSearchParams({ target_date: targetDate })}`
}
