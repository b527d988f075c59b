/**
 * The web console's listener (DECISIONS.md "Web console"): Fastify 5 over
 * HTTPS with the API's server certificate and no client certificate, on its own port,
 * so no console work ever runs on the API's request path. Security headers (helmet:
 * strict CSP without inline script, frame-ancestors 'none', nosniff, Referrer-Policy),
 * `Cache-Control: no-store` on every page, a global rate limit, local assets only.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { inDataDir, type EpxConfig } from '../config.ts'
import { EpxError, isEpxError } from '../errors.ts'
import { adminPages } from './admin/index.ts'
import { storageQuota } from '../apply/quota.ts'
import type { ConsoleDeps, ConsolePage } from './deps.ts'
import { errorPage, installPage } from './layout.ts'
import { openTenure } from '../store/tenure.ts'
import { openInstructionFlags } from '../store/instruction-flags.ts'
import { openMetering } from '../store/metering.ts'
import { openDeliveries } from '../store/deliveries.ts'
import { loginRoutes } from './login.ts'
import { createLoginThrottle, type ThrottleLimits } from './login-throttle.ts'
import { accountRoutes } from './account.ts'
import { installSessions } from './session.ts'
import { tokensPage } from './tokens-page.ts'
import { besoinsPages } from './pages/besoins.ts'
import { programmesPages } from './pages/programmes.ts'
import { realisePages } from './pages/realise.ts'
import { webhooksPages } from './webhooks/pages.ts'
import { openWebhooks } from '../store/webhooks.ts'
import { openEvents } from '../store/events.ts'
import type { EventBell } from '../store/event-bell.ts'
import { connectOptionsOf } from '../webhooks/echo-check.ts'

/** The page modules, in registration order; the navigation (layout.ts) shows an entry once its route exists. */
const PAGES: readonly ConsolePage[] = [besoinsPages, programmesPages, realisePages, tokensPage, webhooksPages, ...adminPages]

/**
 * The assets folder: beside this module in the sources, `../src/console/assets` from
 * dist/ (esbuild bundles the code, not the CSS and JS files it serves).
 */
function assetsRoot (): string {
  const candidates = ['./assets/', '../src/console/assets/'].map(p => fileURLToPath(new URL(p, import.meta.url)))
  return candidates.find(p => existsSync(p)) ?? candidates[0]!
}

function readPem (dataDir: string, file: string): Buffer {
  const path = inDataDir(dataDir, file)
  try {
    return readFileSync(path)
  } catch (err) {
    throw new EpxError('EPX_TLS_FILES', [path, (err as Error).message], { cause: err })
  }
}

/** Whether `host` is a loopback name or address (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost (host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h)
}

export interface ConsoleOptions {
  readonly config: EpxConfig
  readonly dataDir: string
  readonly deps: Omit<ConsoleDeps, 'session' | 'flags' | 'loginThrottle' | 'realisation' | 'tenure' | 'deliveries' | 'limits' | 'webhooks'>
  /** Test seam: tighter login limits. */
  readonly loginLimits?: ThrottleLimits
  /** The process's event bell: rung after a change of webhooks, so the deliverer looks at once. */
  readonly bell?: EventBell
}

export interface RunningConsole {
  readonly url: URL
  close(): Promise<void>
  /** At once: stops accepting and destroys every connection (a thread about to die). */
  abort(): void
}

/**
 * Fastify and its plugins, loaded only when the console opens: a plugin whose console
 * is off does not pay their ~150 ms of import and ~20 MB of memory (measured here).
 */
async function loadFastify () {
  const [fastify, cookie, formbody, helmet, rateLimit, statics] = await Promise.all([
    import('fastify'), import('@fastify/cookie'), import('@fastify/formbody'), import('@fastify/helmet'), import('@fastify/rate-limit'), import('@fastify/static'),
  ])
  return {
    Fastify: fastify.default,
    fastifyCookie: cookie.default,
    fastifyFormbody: formbody.default,
    fastifyHelmet: helmet.default,
    fastifyRateLimit: rateLimit.default,
    fastifyStatic: statics.default,
  }
}

export async function buildConsole (opts: ConsoleOptions): Promise<FastifyInstance> {
  const { config, dataDir } = opts
  const { Fastify, fastifyCookie, fastifyFormbody, fastifyHelmet, fastifyRateLimit, fastifyStatic } = await loadFastify()
  const tenure = openTenure(opts.deps.store)
  const events = openEvents(opts.deps.store)
  const deps: ConsoleDeps = {
    ...opts.deps,
    flags: openInstructionFlags(opts.deps.store),
    tenure,
    // Read only: the service records the receipts and writes them every few seconds (store/deliveries.ts).
    deliveries: openDeliveries(opts.deps.store),
    realisation: {
      instructions: opts.deps.instructions,
      metering: openMetering(opts.deps.store, { now: () => opts.deps.clock.now().getTime(), retentionDays: config.inbound.retentionDays }),
      tolerance: config.delivery,
      holders: (siteId, fromMs, untilMs) => tenure.holdersDuring(siteId, fromMs, untilMs),
    },
    limits: { rateLimit: config.api.rateLimit, quota: storageQuota(opts.deps.store, config.inbound.maxBytesPerCompanyPerDay) },
    webhooks: {
      endpoints: openWebhooks(opts.deps.store),
      lastEvent: companyId => events.lastSeq(companyId),
      // Read at each check, as `epx webhook add` does: a CA file put in place later is seen.
      connect: () => connectOptionsOf(config.webhooks, dataDir),
      changed: () => opts.bell?.ring(),
    },
    loginThrottle: createLoginThrottle(opts.loginLimits),
    session: { idleMs: config.console.sessionIdleMinutes * 60_000, maxMs: config.console.sessionMaxHours * 3_600_000 },
  }
  const app = Fastify({
    https: {
      cert: readPem(dataDir, config.api.tls.certFile),
      key: readPem(dataDir, config.api.tls.keyFile),
      minVersion: 'TLSv1.2',
      handshakeTimeout: config.api.handshakeTimeoutMs,
    },
    // The same slow-client bounds as the API (DECISIONS.md "Robustness").
    connectionTimeout: config.api.requestTimeoutMs,
    requestTimeout: config.api.requestTimeoutMs,
    keepAliveTimeout: 5_000,
    bodyLimit: 64 * 1024,
    // Fastify's own logger would log URLs and errors with their context; the console logs what it decides, never a body.
    logger: false,
    // While it drains (close()), a request on a kept-alive connection is still served, with
    // `Connection: close`: a page, not a bare 503 (a thread about to die cuts them all instead).
    return503OnClosing: false,
  })
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
    },
    referrerPolicy: { policy: 'same-origin' },
    // The same as frame-ancestors 'none', for browsers that only know the older header.
    frameguard: { action: 'deny' },
    // On loopback HSTS would pin every service of the host name (localhost) to HTTPS for a
    // year; a console reachable from elsewhere is always HTTPS, and says so (RFC 6797).
    strictTransportSecurity: isLoopbackHost(config.console.host) ? false : { maxAge: 31_536_000 },
  })
  await app.register(fastifyCookie)
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 })
  // A floor against floods; login attempts have their own, stricter throttle (login-throttle.ts).
  await app.register(fastifyRateLimit, { max: 600, timeWindow: 60_000 })
  await app.register(fastifyStatic, {
    root: assetsRoot(), prefix: '/assets/', index: false, list: false, maxAge: 3_600_000,
    // Assets are public: the session layer skips them.
    serveDotFiles: false,
  })
  installPage(app)
  installSessions(app, deps)
  app.addHook('onSend', async (request, reply) => {
    if (!request.url.startsWith('/assets/')) reply.header('Cache-Control', 'no-store')
  })
  app.setNotFoundHandler((request, reply) => errorPage(reply, 404, 'Page introuvable', "Cette page n'existe pas, ou vous n'y avez pas accès."))
  app.setErrorHandler((err, request, reply) => {
    if (isEpxError(err) && err.code === 'NO_STORE') {
      return errorPage(reply.header('Retry-After', '5'), 503, 'Service momentanément indisponible', 'Le stockage ne répond pas ; réessayez dans quelques secondes.')
    }
    const status = (err as { statusCode?: number }).statusCode
    if (status === 429) return errorPage(reply, 429, 'Trop de requêtes', 'Trop de requêtes depuis votre adresse ; réessayez dans une minute.')
    if (status !== undefined && status >= 400 && status < 500) return errorPage(reply, status, 'Requête invalide', 'Cette requête ne peut pas être traitée.')
    deps.log.error({ err: { message: (err as Error).message, code: (err as { code?: string }).code }, url: request.routeOptions.url }, 'console page failed')
    return errorPage(reply, 500, 'Erreur interne', "La page n'a pas pu être affichée ; rien n'a été modifié. L'exploitant trouvera le détail dans les journaux.")
  })
  // Browsers ask for it whatever the page's <link rel="icon"> says.
  app.get('/favicon.ico', { config: { access: 'public' } }, async (request, reply) => reply.redirect('/assets/favicon.svg', 301))
  app.get('/', async (request, reply) => reply.redirect(app.hasRoute({ method: 'GET', url: '/besoins-agreges' }) ? '/besoins-agreges' : '/tokens', 303))
  loginRoutes(app, deps, deps.loginThrottle)
  accountRoutes(app, deps, deps.loginThrottle)
  for (const page of PAGES) await page(app, deps)
  return app
}

/**
 * Builds the console (Fastify, its plugins and pages: most of a console's start); it binds
 * `console.host:console.port` when `listen()` is called. A standby door builds it ahead
 * and binds only when it takes over (door/supervisor.ts).
 */
export async function prepareConsole (opts: ConsoleOptions): Promise<{ listen(): Promise<RunningConsole>; close(): Promise<void> }> {
  const app = await buildConsole(opts)
  // Its plugins and routes loaded now, not when it binds.
  await app.ready()
  // Every TCP connection, handshaking or not: Node's closeAllConnections() knows only those
  // past their TLS handshake, and a request on one it missed would reach a closing console.
  const sockets = new Set<Socket>()
  app.server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.once('close', () => sockets.delete(s))
  })
  let closing: Promise<void> | undefined
  const close = () => closing ??= app.close()
  return {
    close,
    async listen () {
      const { host, port } = opts.config.console
      try {
        await app.listen({ host, port })
      } catch (err) {
        await close().catch(() => {})
        throw new EpxError('EPX_LISTEN_FAILED', [host, port, (err as Error).message], { cause: err })
      }
      const address = app.server.address()
      const bound = typeof address === 'object' && address ? address.port : port
      const url = new URL(`https://${host.includes(':') ? `[${host}]` : host}:${bound}/`)
      return {
        url,
        close,
        abort () {
          // At once, not when Fastify's close gets to it: no connection is accepted after this.
          if (app.server.listening) app.server.close()
          void close().catch(() => {})
          for (const s of sockets) s.destroy()
        },
      }
    },
  }
}
