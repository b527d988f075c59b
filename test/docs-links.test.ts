import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join, relative } from 'node:path'

// The README is the front door and docs/ holds the rest: a link that leads nowhere (a
// file moved, a section renamed) sends a newcomer astray. Every relative link of
// README.md, docs/*.md and bench/README.md must name a file of the repository and, with a
// #fragment, a heading of that file (GitHub's anchors).
const root = fileURLToPath(new URL('..', import.meta.url))
const documents = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(root, 'docs')).filter(f => f.endsWith('.md')).map(f => `docs/${f}`),
]

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf (heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
}

/** The anchors of a Markdown file's headings (outside fenced code). */
function anchorsOf (path: string): Set<string> {
  const text = readFileSync(path, 'utf8').replace(/^```[\s\S]*?^```/gm, '')
  return new Set([...text.matchAll(/^#{1,6} +(.+)$/gm)].map(m => anchorOf(m[1]!)))
}

/** Relative link targets of a Markdown file (outside fenced code and inline code). */
function linksOf (path: string): string[] {
  const text = readFileSync(path, 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``')
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map(m => m[1]!)
    .filter(target => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}

t.ok(existsSync(join(root, 'docs', 'configuration.md')), 'docs/ is there')

for (const document of documents) {
  t.test(document, async t => {
    const links = linksOf(join(root, document))
    for (const link of links) {
      const [pathPart, fragment] = link.split('#') as [string, string | undefined]
      const target = pathPart === '' ? join(root, document) : join(root, dirname(document), decodeURIComponent(pathPart))
      const shown = relative(root, target)
      if (!t.ok(existsSync(target), `${link}: ${shown} exists`)) continue
      if (fragment === undefined || statSync(target).isDirectory() || !target.endsWith('.md')) continue
      t.ok(anchorsOf(target).has(fragment), `${link}: ${shown} has a heading for #${fragment}`)
    }
  })
}

t.test('the README stays a front door: short, with a table of contents', async t => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  t.ok(readme.split('\n').length < 250, 'under 250 lines')
  t.match(readme, /^## Contents$/m, 'a table of contents')
  t.match(readme, /npm install && npm start/, 'the first command')
  t.match(readme, /npm test/, 'the second command')
  const engines = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node as string
  t.ok(readme.includes(`Node.js **${engines.replace('>=', '>= ')}**`), `the Node.js range it states is package.json's (${engines})`)
})

t.test('src/ cites bench/README.md by a heading of it, and bench/ files that exist', async t => {
  const anchors = anchorsOf(join(root, 'bench', 'README.md'))
  const sources = (dir: string): string[] => readdirSync(dir).flatMap(f => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? (f === 'generated' ? [] : sources(p)) : p.endsWith('.ts') ? [p] : []
  })
  let cited = 0
  for (const file of sources(join(root, 'src'))) {
    const text = readFileSync(file, 'utf8')
    const shown = relative(root, file)
    // A measured choice names the section that holds its figure, not the whole file.
    for (const m of text.matchAll(/bench\/README\.md(?:#([\p{L}\p{N}_-]+))?/gu)) {
      cited++
      t.ok(m[1] !== undefined && anchors.has(m[1]), `${shown}: bench/README.md${m[1] ? '#' + m[1] : ''} names a heading of it`)
    }
    for (const m of text.matchAll(/\bbench\/[\w/.-]+\.ts\b/g)) t.ok(existsSync(join(root, m[0])), `${shown}: ${m[0]} exists`)
  }
  t.ok(cited > 30, `the citations are read (${cited})`)
})
