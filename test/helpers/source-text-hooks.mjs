/** The load hook of tsx-with-source-text.mjs: runs after tsx, fills the inline map's sourcesContent. */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const INLINE_MAP = /\n\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/

export async function load (url, context, nextLoad) {
  const result = await nextLoad(url, context)
  if (!url.startsWith('file:') || !/\.[cm]?ts$/.test(new URL(url).pathname) || result.source == null) return result
  const code = String(result.source)
  const m = INLINE_MAP.exec(code)
  if (!m) return result
  const map = JSON.parse(Buffer.from(m[1], 'base64').toString('utf8'))
  if (!Array.isArray(map.sourcesContent) || map.sourcesContent.some(s => s !== null)) return result
  map.sourcesContent = map.sources.map(s => readFileSync(s.startsWith('file:') ? fileURLToPath(s) : s, 'utf8'))
  const inline = Buffer.from(JSON.stringify(map), 'utf8').toString('base64')
  return { ...result, source: `${code.slice(0, m.index)}\n//# sourceMappingURL=data:application/json;base64,${inline}` }
}
