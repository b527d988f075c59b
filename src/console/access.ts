/**
 * Tenancy on console pages: an admin may act on any company, a member on its own only.
 * A record of another company is answered exactly as a missing one (404), so a member
 * editing a URL learns nothing about other companies.
 * @module
 */
import type { Viewer } from './viewer.ts'

export function mayActFor (viewer: Viewer, companyId: string): boolean {
  return viewer.admin || viewer.companyId === companyId
}

/** The company a page is about: the member's own, or for an admin the one asked for (undefined: all). */
export function companyInView (viewer: Viewer, asked: unknown): string | undefined {
  if (!viewer.admin) return viewer.companyId ?? undefined
  return typeof asked === 'string' && asked !== '' ? asked : undefined
}

/** A form field that may come as one value or several (checkboxes): always a list of strings. */
export function fieldValues (body: unknown, name: string): string[] {
  const v = (body as Record<string, unknown> | undefined)?.[name]
  if (v === undefined) return []
  return (Array.isArray(v) ? v : [v]).filter((x): x is string => typeof x === 'string')
}

/** A single text field, trimmed; '' when absent. */
export function fieldText (body: unknown, name: string): string {
  const v = (body as Record<string, unknown> | undefined)?.[name]
  return typeof v === 'string' ? v.trim() : ''
}
