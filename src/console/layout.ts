/**
 * The console's page shell: the layout `reply.page()` renders (French navigation,
 * who is logged in, the logout form) and the error pages. Every page is built from
 * `html`, so nothing here or in a page interpolates unescaped text.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { html, raw, type SafeHtml } from './html.ts'
import type { PageContent, Viewer } from './viewer.ts'

interface NavEntry { readonly href: string; readonly label: string; readonly admin?: boolean }

/**
 * Every page the navigation may show, in order. An entry appears only once a route
 * answers GET at its address (pages modules register theirs, see server.ts), and admin
 * entries only to admins.
 */
const NAV: readonly NavEntry[] = [
  { href: '/besoins-agreges', label: 'Besoins agrégés' },
  { href: '/programmes', label: 'Programmes' },
  { href: '/realise', label: 'Réalisé' },
  { href: '/tokens', label: "Jetons d'accès" },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/admin/companies', label: 'Entreprises', admin: true },
  { href: '/admin/users', label: 'Utilisateurs', admin: true },
  { href: '/admin/publish', label: 'Publier maintenant', admin: true },
  { href: '/admin/audit', label: 'Journal d\'audit', admin: true },
  { href: '/admin/deliveries', label: 'Récupérations', admin: true },
]

export function csrfField (viewer: Viewer): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${viewer.csrfToken}">`
}

function navigation (app: FastifyInstance, viewer: Viewer | null, current: string): SafeHtml {
  if (!viewer) return html``
  const entries = NAV.filter(e => (!e.admin || viewer.admin) && app.hasRoute({ method: 'GET', url: e.href }))
  return html`<nav aria-label="Navigation principale"><ul>${entries.map(e => html`
    <li><a href="${e.href}"${current === e.href || current.startsWith(e.href + '/') ? html` aria-current="page"` : ''}>${e.label}</a></li>`)}
  </ul>
  <form method="post" action="/logout" class="logout">${csrfField(viewer)}
    <span>${viewer.username} · ${viewer.admin ? 'administrateur' : `entreprise ${viewer.companyId}`}</span>
    <a href="/compte/mot-de-passe"${current === '/compte/mot-de-passe' ? html` aria-current="page"` : ''}>Mot de passe</a>
    <button type="submit">Se déconnecter</button>
  </form></nav>`
}

/**
 * Every table of a page inside a box that scrolls sideways on its own (a phone's page
 * never does), focusable so a keyboard can scroll it, named after the table's caption.
 * Works on the page's rendered HTML: tables are built only by the console's templates.
 */
export function scrollableTables (body: string): string {
  let n = 0
  return body.replace(/<table\b[^>]*>(\s*<caption[^>]*>([\s\S]*?)<\/caption>)?/g, (open, _caption: string | undefined, text: string | undefined) => {
    n++
    const name = text ? text.replace(/<[^>]*>/g, '').replace(/\s+/g, ' ').trim() : ''
    return html`<div class="table-scroll" tabindex="0" role="region" aria-label="${name || `Tableau ${n}`}">`.toString() + open
  }).replace(/<\/table>/g, '</table></div>')
}

export function renderLayout (app: FastifyInstance, request: FastifyRequest, content: PageContent): string {
  const path = request.url.split('?')[0]!
  return html`<!doctype html>
<html lang="fr">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${content.title} · console epx</title>
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/console.css">
</head>
<body>
<a class="skip-link" href="#contenu">Aller au contenu</a>
<header><a class="brand" href="/">epx · console</a>${navigation(app, request.viewer, path)}</header>
<main id="contenu" tabindex="-1">
<h1>${content.title}</h1>
${raw(scrollableTables(content.body.toString()))}
</main>
</body>
</html>
`.toString()
}

/** The page decorator every route uses: status 200 unless set, HTML, no-store (set by server.ts for every non-asset answer). */
export function installPage (app: FastifyInstance): void {
  app.decorateReply('page', function (this: FastifyReply, content: PageContent) {
    return this.type('text/html; charset=utf-8').send(renderLayout(app, this.request, content))
  })
}

/** An error page: status, French title, a sentence saying what to do. */
export function errorPage (reply: FastifyReply, status: number, title: string, message: string | SafeHtml): FastifyReply {
  return reply.code(status).page({ title, body: html`<p class="error" role="alert">${message}</p><p><a href="/">Retour à l'accueil</a></p>` })
}
