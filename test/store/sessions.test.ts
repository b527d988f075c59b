import t from 'tap'
import { openSessions } from '../../src/store/sessions.ts'
import { storeKinds, storesOf } from '../helpers/store-kinds.ts'

for (const kind of storeKinds) {
  t.test(kind, async t => {
    const { openStore } = storesOf(t, kind)

    t.test("a session's record is rewritten atomically: a flash set, then taken once; an unknown session is left alone", async t => {
      const store = await openStore(t.testdir())
      const sessions = openSessions(store)
      await sessions.put('h1', { username: 'alice', csrfToken: 'c', createdAtMs: 0, lastSeenAtMs: 0 })
      const set = await sessions.update('h1', s => ({ ...s, flash: { key: '/admin/users', data: { notice: 'ok' } } }))
      t.same(set?.flash, { key: '/admin/users', data: { notice: 'ok' } })
      t.same(sessions.get('h1')?.flash, { key: '/admin/users', data: { notice: 'ok' } }, 'read back as written')
      t.equal(await sessions.update('h1', () => undefined), undefined, 'a change that returns nothing writes nothing')
      t.ok(sessions.get('h1')?.flash, 'so the flash is still there')
      await sessions.update('h1', ({ flash: _, ...rest }) => rest)
      t.equal(sessions.get('h1')?.flash, undefined, 'taken')
      t.equal(await sessions.update('nobody', s => ({ ...s, lastSeenAtMs: 1 })), undefined, 'no session: nothing made')
      t.equal(sessions.get('nobody'), undefined)
    })
  })
}
