/**
 * The problem types' pages (RFC 9457 §3.1.1: a `type` URI, dereferenced, should give
 * documentation a person can read): `GET {base_url}/errors/<slug>` answers a small HTML page
 * for each slug the outbound door uses, made from the error catalogue (`errors.ts`: status,
 * title, and each code's `help` in English and French), never from a copy of its words.
 *
 * The pages are the API's own documentation, nobody's data: the door answers them without
 * the authentication chain (no token; the TLS handshake asks for a client certificate but
 * needs none) and outside any company's budget. An unknown slug is an unknown path (404
 * `UNKNOWN_PATH`), as the router answers every other.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { catalogue, problemCodeOf, type ErrorCode, type ErrorSpec } from '../errors.ts'
import { NO_CREDENTIALS, NOSNIFF, type PageRoute } from './route.ts'

/** Where the pages are, under the listener's root (which `{base_url}` names). */
export const ERRORS_PATH = '/errors/'

/** A page changes only with epx itself: a day's reuse is harmless. */
const CACHE_CONTROL = 'public, max-age=86400'
/** The page runs nothing and loads nothing. */
const CSP = "default-src 'none'; style-src 'unsafe-inline'"

/** Every slug a problem can carry, with the codes that carry it, in the catalogue's order. */
export function problemSlugs (): ReadonlyMap<string, readonly ErrorCode[]> {
  const slugs = new Map<string, ErrorCode[]>()
  for (const [code, spec] of Object.entries(catalogue) as Array<[ErrorCode, ErrorSpec]>) {
    if (spec.slug === undefined) continue
    let codes = slugs.get(spec.slug)
    if (!codes) slugs.set(spec.slug, codes = [])
    codes.push(code)
  }
  return slugs
}

/** One route per slug: the router answers an unknown one 404, in the outbound door's format. */
export function errorPageRoutes (): PageRoute[] {
  return [...problemSlugs()].map(([slug, codes]): PageRoute => {
    const body = Buffer.from(errorPage(slug, codes))
    const headers = {
      'content-type': 'text/html; charset=utf-8',
      'content-length': body.length,
      'cache-control': CACHE_CONTROL,
      'content-security-policy': CSP,
      'x-content-type-options': NOSNIFF,
    }
    const serve = (head: boolean) => (_req: IncomingMessage, res: ServerResponse): void => {
      res.writeHead(200, headers)
      res.end(head ? undefined : body)
    }
    return { path: ERRORS_PATH + slug, door: 'outbound', scope: NO_CREDENTIALS, label: 'errors', methods: { GET: serve(false), HEAD: serve(true) } }
  })
}

/** The page of a slug: its status and title, then each code's meaning and remedy, in English and in French. */
export function errorPage (slug: string, codes: readonly ErrorCode[]): string {
  const first = catalogue[codes[0]!] as ErrorSpec
  const heading = `${first.status ?? ''} ${first.title ?? ''}`.trim()
  const sections = codes.map(code => {
    const spec = catalogue[code] as ErrorSpec
    const names = problemCodeOf(code) === code ? `<code>${code}</code>` : `<code>${code}</code> (<code>${problemCodeOf(code)}</code> in a problem)`
    return `<section id="${code}">
<h2>${names}: HTTP ${spec.status ?? ''}</h2>
<p lang="en">${prose(spec.help?.en ?? '')}</p>
<p lang="fr">${prose(spec.help?.fr ?? '')}</p>
</section>`
  })
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width">
<title>${escapeHtml(slug)}: ${escapeHtml(heading)} (epx API)</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}p[lang=fr]{color:#444}</style>
</head>
<body>
<h1>${escapeHtml(heading)}: <code>${escapeHtml(slug)}</code></h1>
<p>A problem <code>type</code> of the epx API (RFC 9457): an error's <code>code</code> says which of these it is, its <code>detail</code> what was wrong. <span lang="fr">Un type d'erreur de l'API epx : le <code>code</code> de l'erreur dit lequel, son <code>detail</code> ce qui n'allait pas.</span></p>
${sections.join('\n')}
</body>
</html>
`
}

/** A catalogue line as HTML: escaped, its `backquoted` words as code. */
function prose (text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>')
}

function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)
}
