import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { nameThisThread } from '../src/os-thread.ts'
import { startEpx } from './helpers/epx.ts'

// Operators see epx's threads by name (`top -H`), and the bench splits CPU by them; the
// door's thread yields the CPU to the solver's (api.workerNice).
const threads = () => readdirSync('/proc/self/task').flatMap(tid => {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // Fields after the name (which may hold spaces): state is field 3, nice field 19.
    const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return [{ tid, name: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(), nice: Number(after[16]) }]
  } catch {
    return []
  }
})
const names = () => threads().map(x => x.name)

t.test('nameThisThread names the calling thread alone, cut at 15 bytes', async t => {
  const own = `/proc/self/task/${process.pid}/comm`
  const before = readFileSync(own, 'utf8').trim()
  t.teardown(() => nameThisThread(before))
  nameThisThread('epx-a-very-long-thread-name')
  t.equal(readFileSync(own, 'utf8').trim(), 'epx-a-very-long')
  t.equal(names().filter(n => n === 'epx-a-very-long').length, 1, 'no other thread renamed')
})

t.test('the API door\'s worker is called epx-door and runs at api.workerNice (default 10); the solver\'s thread keeps its priority', async t => {
  const mainNice = threads().find(x => x.tid === String(process.pid))!.nice
  await startEpx(t, { config: { api: { inWorker: true } } })
  const door = threads().filter(x => x.name === 'epx-door')
  t.equal(door.length, 1, names().join(', '))
  t.equal(door[0]!.nice, Math.min(19, mainNice + 10), 'the door\'s thread, 10 nicer than the process')
  t.equal(threads().find(x => x.tid === String(process.pid))!.nice, mainNice, 'the main thread untouched')
  t.notOk(threads().some(x => x.name !== 'epx-door' && x.nice !== mainNice), 'no other thread reniced')
})

t.test('api.workerNice: 0 leaves the door\'s thread at the solver\'s priority', async t => {
  const mainNice = threads().find(x => x.tid === String(process.pid))!.nice
  await startEpx(t, { config: { api: { inWorker: true, workerNice: 0 } } })
  t.equal(threads().find(x => x.name === 'epx-door')!.nice, mainNice)
})
