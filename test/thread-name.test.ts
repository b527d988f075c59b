import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { nameThisThread } from '../src/thread-name.ts'
import { startEpx } from './helpers/epx.ts'

// Operators see epx's threads by name (`top -H`), and the bench splits CPU by them.
const names = () => readdirSync('/proc/self/task').map(tid => {
  try { return readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() } catch { return '' }
})

t.test('nameThisThread names the calling thread alone, cut at 15 bytes', async t => {
  const own = `/proc/self/task/${process.pid}/comm`
  const before = readFileSync(own, 'utf8').trim()
  t.teardown(() => nameThisThread(before))
  nameThisThread('epx-a-very-long-thread-name')
  t.equal(readFileSync(own, 'utf8').trim(), 'epx-a-very-long')
  t.equal(names().filter(n => n === 'epx-a-very-long').length, 1, 'no other thread renamed')
})

t.test('the API door\'s worker is called epx-door', async t => {
  await startEpx(t, { config: { api: { inWorker: true } } })
  t.ok(names().includes('epx-door'), names().join(', '))
})
