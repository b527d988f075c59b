/**
 * The "Programmes" routes: a day's received instructions (GET /programmes?target_date[&site_id])
 * and one instruction of one site (GET /programmes/:instructionId/:siteId).
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { loadProgramme, loadProgrammes, type ProgrammesDeps } from './programmes-model.ts'
import { renderProgramme, renderProgrammes } from './programmes-view.ts'
import { PROGRAMMES_PATH } from './paths.ts'
import { one, refuse, viewerOr403 } from './respond.ts'

export async function programmesPages (app: FastifyInstance, deps: ProgrammesDeps): Promise<void> {
  app.get(PROGRAMMES_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const loaded = await loadProgrammes(deps, viewer, { site_id: one(request.query, 'site_id'), target_date: one(request.query, 'target_date') })
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: 'Programmes reçus', body: renderProgrammes(loaded.model) })
  })

  app.get<{ Params: { instructionId: string; siteId: string } }>(`${PROGRAMMES_PATH}/:instructionId/:siteId`, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const loaded = loadProgramme(deps, viewer, request.params.instructionId, request.params.siteId)
    if (loaded.status !== 200) return refuse(reply, loaded)
    return reply.page({ title: `Programme ${request.params.instructionId}`, body: renderProgramme(loaded.model, await deps.sites()) })
  })
}
