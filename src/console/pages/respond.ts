/**
 * What the console's pages share when they answer: reading one query parameter, and
 * the pages for a refused request (400 says what to fix; 404 says nothing of why, so a
 * member cannot tell another company's site from a site that does not exist).
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { html } from '../html.ts'
import type { Viewer } from '../viewer.ts'

/** A query parameter given once; repeated ones are read as their first value. */
export function one (query: unknown, name: string): string | undefined {
  const v = (query as Record<string, unknown> | undefined)?.[name]
  const first = Array.isArray(v) ? v[0] : v
  return typeof first === 'string' ? first : undefined
}

/** The viewer, or a 403 sent: the session layer guarantees one on these routes, and a gap there must not open them. */
export function viewerOr403 (request: FastifyRequest, reply: FastifyReply): Viewer | undefined {
  if (request.viewer) return request.viewer
  void reply.code(403).page({ title: 'Accès refusé', body: html`<p>Connectez-vous pour voir cette page.</p>` })
  return undefined
}

export function refuse (reply: FastifyReply, r: { status: 400; message: string } | { status: 404 }): FastifyReply {
  return r.status === 400
    ? reply.code(400).page({ title: 'Requête invalide', body: html`<p class="error">${r.message}</p>` })
    : reply.code(404).page({ title: 'Page introuvable', body: html`<p>Cette page n'existe pas, ou elle n'est pas dans votre périmètre.</p>` })
}
