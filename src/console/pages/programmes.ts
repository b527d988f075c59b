/**
 * The "Programmes" routes: a day's received instructions (GET /programmes?target_date[&site_id][&q]
 * [&company_id][&status][&sort][&after|before], `programmes-list.ts`)
 * and one instruction of one site (GET /programmes/:instructionId/:siteId).
 * @module
 */
import type { FastifyInstance } from 'fastify'
import { loadProgramme, type ProgrammesDeps } from './programmes-model.ts'
import { loadProgrammes } from './programmes-list.ts'
import { renderProgramme, renderProgrammes } from './programmes-view.ts'
import { PROGRAMMES_PATH } from './paths.ts'
import { one, refuse, viewerOr403 } from './respond.ts'

export async function programmesPages (app: FastifyInstance, deps: ProgrammesDeps): Promise<void> {
  app.get(PROGRAMMES_PATH, async (request, reply) => {
    const viewer = viewerOr403(request, reply)
    if (!viewer) return reply
    const q = (name: string) => one(request.query, name)
    const loaded = await loadProgrammes(deps, viewer, {
      site_id: q('site_id'), target_date: q('target_date'), q: q('q'), company_id: q('company_id'), status: q('status'), sort: q('sort'), after: q('after'), before: q('before'),
    })
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
