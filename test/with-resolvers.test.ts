import t from 'tap'
import { withResolvers } from '../src/with-resolvers.ts'

t.test('each call has its own promise and its own settlers, however many are pending', async t => {
  const a = withResolvers<string>()
  const b = withResolvers<string>()
  const c = withResolvers<string>()
  t.not(a.promise, b.promise)
  t.not(a.resolve, b.resolve, 'the settlers handed over by the one executor are not shared')
  c.reject(new Error('c failed'))
  b.resolve('b')
  a.resolve('a')
  t.equal(await a.promise, 'a')
  t.equal(await b.promise, 'b')
  await t.rejects(c.promise, { message: 'c failed' })
})

t.test('a promise settles once: what follows its first settler is ignored', async t => {
  const r = withResolvers<number>()
  r.resolve(1)
  r.reject(new Error('too late'))
  r.resolve(2)
  t.equal(await r.promise, 1)
})

t.test('settlers taken in one call and used from another still settle their own promise', async t => {
  const outer = withResolvers<number>()
  const inner = withResolvers<number>()
  queueMicrotask(() => { outer.resolve(7); inner.resolve(8) })
  t.same(await Promise.all([outer.promise, inner.promise]), [7, 8])
})
