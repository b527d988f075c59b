import t from 'tap'
import { formatTable, printList } from '../../src/cli/table.ts'

const view = { empty: 'no things yet', header: ['ID', 'NAME'], row: (r: { id: string; name: string }) => [r.id, r.name] }

t.test('a table: columns left-aligned two spaces apart, no trailing spaces', async t => {
  t.same(formatTable([['ID', 'NAME'], ['a', 'Alpha'], ['bbb', 'B']]), ['ID   NAME', 'a    Alpha', 'bbb  B'])
})

t.test('a list command prints a table, a sentence when there is nothing, and JSON (an empty list too) with --json', async t => {
  const lines: string[] = []
  const out = (l: string) => { lines.push(l) }
  printList(out, false, [{ id: 'a', name: 'Alpha' }], view)
  t.same(lines.splice(0), ['ID  NAME', 'a   Alpha'])
  printList(out, false, [], view)
  t.same(lines.splice(0), ['no things yet'])
  printList(out, true, [], view)
  t.same(lines.splice(0), ['[]'], 'scripts get an empty list, not a sentence')
  printList(out, true, [{ id: 'a', name: 'Alpha' }], view)
  t.same(JSON.parse(lines.splice(0).join('\n')), [{ id: 'a', name: 'Alpha' }])
})
