/**
 * A console page module mounted on a bare Fastify app, for page tests before the
 * console core exists on this branch: a stub `reply.page` (title and body in a minimal
 * document) and a `viewer` the test sets. Real HTTP over loopback, read with undici.
 *
 *   const app = await pageApp(t, app => besoinsPages(app, deps))
 *   app.viewer = member('acme')
 *   const r = await app.get('/besoins-agreges?site_id=…')   // { status, headers, text, bytes }
 * @module
 */
import type { Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { request } from 'undici'
import { escape } from 'html-escaper'
import type { PageContent, Viewer } from '../../src/console/viewer.ts'

export interface PageApp {
  viewer: Viewer | null
  get(path: string): Promise<{ status: number; headers: Record<string, string>; text: string; bytes: Buffer }>
}

export const admin: Viewer = { username: 'root', admin: true, companyId: null, csrfToken: 'csrf' }
export const member = (companyId: string): Viewer => ({ username: `${companyId}-user`, admin: false, companyId, csrfToken: 'csrf' })

export async function pageApp (t: Test, register: (app: FastifyInstance) => Promise<void>): Promise<PageApp> {
  const app = Fastify()
  const holder: PageApp = { viewer: admin, get: undefined! }
  app.decorateRequest('viewer', null)
  app.decorateReply('page', function (this: any, content: PageContent) {
    return this.type('text/html; charset=utf-8').send(`<!doctype html><title>${escape(content.title)}</title><main>${content.body}</main>`)
  })
  app.addHook('onRequest', async req => { req.viewer = holder.viewer })
  await register(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
  holder.get = async path => {
    const res = await request(base + path)
    const bytes = Buffer.from(await res.body.arrayBuffer())
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v
    return { status: res.statusCode, headers, text: bytes.toString('utf8'), bytes }
  }
  return holder
}
