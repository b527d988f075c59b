import t from 'tap'
import { BoundedCache } from '../src/bounded-cache.ts'

t.test('remembers what it was told until a new key finds it full: then it starts over with that key alone', async t => {
  const cache = new BoundedCache<string, number>(3)
  cache.set('a', 1)
  cache.set('b', 2)
  cache.set('c', 3)
  t.same([cache.get('a'), cache.get('b'), cache.get('c'), cache.size], [1, 2, 3, 3], 'up to its size, everything is kept')
  cache.set('d', 4)
  t.same([cache.get('a'), cache.get('c'), cache.get('d'), cache.size], [undefined, undefined, 4, 1], 'the key past the ceiling empties it first')
})

t.test('an update of a key it holds never empties it, however full', async t => {
  const cache = new BoundedCache<string, string | null>(2)
  cache.set('a', 'x')
  cache.set('b', null)
  cache.set('b', 'y')
  t.same([cache.get('a'), cache.get('b'), cache.size], ['x', 'y', 2])
  t.equal(cache.get('missing'), undefined, 'a miss is undefined; null is a value it keeps')
})

t.test('clear() forgets everything (what it held is no longer true)', async t => {
  const cache = new BoundedCache<number, number>(10)
  cache.set(1, 1)
  cache.clear()
  t.same([cache.get(1), cache.size], [undefined, 0])
})

t.test('a cache that could hold nothing is a mistake, said at once', async t => {
  for (const bad of [0, -1, 1.5, NaN]) t.throws(() => new BoundedCache(bad), RangeError, String(bad))
})

t.test('getOrCompute computes a missing value once, with what it needs besides the key, and remembers it (null included)', async t => {
  const cache = new BoundedCache<string, string | null>(2)
  const calls: string[] = []
  const parse = (key: string, suffix: string) => { calls.push(key); return key === 'bad' ? null : key + suffix }
  t.equal(cache.getOrCompute('a', parse, '!'), 'a!')
  t.equal(cache.getOrCompute('a', parse, '?'), 'a!', 'a hit does not compute again')
  t.equal(cache.getOrCompute('bad', parse, '!'), null)
  t.equal(cache.getOrCompute('bad', parse, '!'), null, 'a remembered null is a hit')
  t.same(calls, ['a', 'bad'])
  t.equal(cache.getOrCompute('c', k => k.toUpperCase()), 'C', 'without an argument; a new key past the ceiling empties it first')
  t.same([cache.get('a'), cache.size], [undefined, 1])
})
