import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join, relative } from 'node:path'

// docs/rules.md, "Where each rule lives", names, for each rule of DECISIONS.md, the
// file and the function or constant that holds it. A rename or a move that forgets the
// table fails here.
const root = fileURLToPath(new URL('..', import.meta.url))
const section = readFileSync(join(root, 'docs', 'rules.md'), 'utf8')
const rows = section.split('\n')
  .filter(l => l.startsWith('| ') && !l.startsWith('| Rule') && !l.startsWith('|---'))
  .map(l => l.split('|').slice(1, -1).map(c => c.trim()))

t.ok(rows.length >= 30, 'the table is there and has a row per rule')

t.test('the page names the test that reads it, by its file', async t => {
  const named = [...section.matchAll(/`(test\/[^`]+\.test\.ts)`/g)].map(m => m[1]!)
  t.ok(named.length > 0, 'a test file is named')
  for (const file of named) t.ok(existsSync(join(root, file)), `${file} exists`)
  t.ok(named.includes(relative(root, fileURLToPath(import.meta.url))), 'this one among them')
})

const sections = ['Identity', 'Time', 'Inbound', 'Outbound', 'Publication', 'Authentication', 'Tenancy', 'Web console', 'Robustness']
for (const name of sections) t.ok(rows.some(([rule]) => rule!.startsWith(name)), `a row for "${name}"`)

for (const [rule, file, name] of rows) {
  if (file === 'not built yet') continue
  t.test(rule!, async t => {
    const path = /^`([^`]+)`$/.exec(file!)?.[1]
    const id = /^`([A-Za-z_$][\w$]*)`$/.exec(name!)?.[1]
    t.ok(path, `a file in backquotes: ${file}`)
    t.ok(id, `a name in backquotes: ${name}`)
    if (!path || !id) return
    t.ok(existsSync(join(root, path)), `${path} exists`)
    if (!existsSync(join(root, path))) return
    const code = readFileSync(join(root, path), 'utf8')
    const defines = new RegExp(`^(?:export\\s+)?(?:async\\s+)?(?:function|const|let|class)\\s+${id.replace(/\$/g, '\\$')}\\b`, 'm')
    t.match(code, defines, `${path} defines ${id}`)
  })
}
