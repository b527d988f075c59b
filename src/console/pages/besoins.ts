/**
 * The "Besoins agrégés" routes: the page (GET /besoins-agreges?site_id&target_date) and
 * the download of a kept revision (GET /besoins-agreges/download?site_id&target_date[&rev]),
 * which answers the stored bytes the API serves, with the API's Content-Type and ETag.
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { loadBesoins, loadRevisionBytes, type BesoinsDeps } from './besoins-model.ts'
import { downloadName, renderBesoins } from './besoins-view.ts'
import { BESOINS_PATH, DOWNLOAD_PATH } from './paths.ts'
import { one, refuse, viewerOr403 } from './respond.ts'

export async function besoinsPages (app: FastifyInstance, deps: BesoinsDeps): Promise<void> {
  app.get(BESOINS_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const loaded = await loadBesoins(deps, viewer, { site_id: one(request.query, 'site_id'), target_date: one(request.query, 'target_date') })
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: 'Besoins agrégés', body: renderBesoins(loaded.model) })
  })

  app.get(DOWNLOAD_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const q = request.query
    const loaded = await loadRevisionBytes(deps, viewer, { site_id: one(q, 'site_id'), target_date: one(q, 'target_date'), rev: one(q, 'rev') })
    if (loaded.status !== 200) return refuse(reply, loaded)
    const { meta, bytes } = loaded.model
    // The API's headers for these bytes (http/outbound-route.ts), plus a file name.
    return reply
      .header('content-type', 'application/json')
      .header('etag', meta.etag)
      .header('last-modified', meta.lastModified)
      .header('content-disposition', `attachment; filename="${downloadName(meta)}"`)
      .send(bytes)
  })
}
