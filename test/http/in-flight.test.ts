import t from 'tap'
import { InFlight, type Linked } from '../../src/http/in-flight.ts'

interface Item extends Linked<Item> { readonly id: number }
const item = (id: number): Item => ({ id, prev: undefined, next: undefined })
const ids = (list: InFlight<Item>): number[] => list.now().map(x => x.id)

t.test('holds what was added, newest first, and counts it', async t => {
  const list = new InFlight<Item>()
  const [a, b, c] = [item(1), item(2), item(3)]
  list.add(a); list.add(b); list.add(c)
  t.same(ids(list), [3, 2, 1])
  t.equal(list.size, 3)
})

t.test('an element removed from the front, the middle or the back leaves the others in order', async t => {
  for (const gone of [1, 2, 3]) {
    const list = new InFlight<Item>()
    const items = [item(1), item(2), item(3)]
    for (const x of items) list.add(x)
    list.delete(items[gone - 1]!)
    t.same(ids(list), [3, 2, 1].filter(id => id !== gone), `without ${gone}`)
    t.equal(list.size, 2)
  }
})

t.test('an element that left keeps no link to the others (nothing it held outlives it)', async t => {
  const list = new InFlight<Item>()
  const items = [item(1), item(2), item(3)]
  for (const x of items) list.add(x)
  list.delete(items[1]!)
  t.equal(items[1]!.prev, undefined)
  t.equal(items[1]!.next, undefined)
  t.equal(items[2]!.next, items[0], 'its neighbours are linked to each other')
  t.equal(items[0]!.prev, items[2])
})

t.test('removing twice, or removing what was never added, changes nothing', async t => {
  const list = new InFlight<Item>()
  const [a, b] = [item(1), item(2)]
  list.add(a); list.add(b)
  list.delete(a); list.delete(a)
  list.delete(item(9))
  t.same(ids(list), [2])
  t.equal(list.size, 1)
  list.delete(b)
  t.same(ids(list), [])
  t.equal(list.size, 0)
  list.add(a)
  t.same(ids(list), [1], 'an element that left can come back')
})

t.test('now() is a copy: removing while going through it skips nothing', async t => {
  const list = new InFlight<Item>()
  const items = [1, 2, 3, 4].map(item)
  for (const x of items) list.add(x)
  const seen: number[] = []
  for (const x of list.now()) { seen.push(x.id); list.delete(x) }
  t.same(seen, [4, 3, 2, 1])
  t.equal(list.size, 0)
})
