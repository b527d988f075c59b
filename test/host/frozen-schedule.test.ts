// DECISIONS.md "Besoins_Agreges publication" as docs/operating.md states it: a scheduled
// publication that comes due while the host is frozen (a VM paused, a long GC: here
// SIGSTOP of the whole `epx start` process for 5 s) runs when the host runs again, late,
// and says so; it is never skipped until the next day.
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { DateTime } from 'luxon'
import { settingsPath } from '../../src/cli/settings.ts'
import { initializedDataDir, startEpx } from '../helpers/cli.ts'
import { until } from '../helpers/eventually.ts'

t.test('a daily publication due while the host is stopped for 5 s still publishes D+1 once it runs again', async t => {
  const dir = await initializedDataDir(t)
  // The cron's time, in the schedule's zone: 12 s from now, to the second.
  const due = DateTime.now().setZone('Europe/Paris').plus({ seconds: 12 }).startOf('second')
  const file = settingsPath(dir)
  const settings = JSON.parse(readFileSync(file, 'utf8')) as { plugin: Record<string, any> }
  settings.plugin.publish = { ...settings.plugin.publish, dailyCron: `${due.second} ${due.minute} ${due.hour} * * *`, timezone: 'Europe/Paris' }
  writeFileSync(file, JSON.stringify(settings, null, 2))

  const run = await startEpx(['--data', dir, 'start', '--port', '0', '--console-port', '0', '--cycle', '60'], /epx API listening on (https:\/\/\S+\/)/)
  t.teardown(() => { run.child.kill('SIGKILL') })
  const lines = () => run.output().split('\n').filter(l => l.startsWith('{')).map(l => { try { return JSON.parse(l) as Record<string, any> } catch { return {} } })

  // Stopped from 1 s before the run's time until 4 s after it.
  await new Promise(resolve => setTimeout(resolve, Math.max(0, due.toMillis() - 1000 - Date.now())))
  run.child.kill('SIGSTOP')
  await new Promise(resolve => setTimeout(resolve, 5000))
  run.child.kill('SIGCONT')

  await until('the scheduled run', () => lines().some(l => l.msg === 'scheduled Besoins_Agreges publication'), { ms: 15_000, everyMs: 50 })
  const fired = lines().find(l => l.msg === 'scheduled Besoins_Agreges publication')!
  const dPlus1 = due.plus({ days: 1 }).toISODate()
  t.same(fired.targetDates, [dPlus1], 'it publishes D+1 of its scheduled time')
  t.ok(fired.lateMs >= 1000, `it ran ${fired.lateMs} ms after its time, once the host ran again`)
  t.ok(lines().some(l => l.level === 40 && /runs \d+ s late/.test(l.msg)), 'a warn line says it ran late')
  await until('the run publishes', () => lines().some(l => l.msg === 'Besoins_Agreges publication run' && l.targetDate === dPlus1 && l.published > 0), { ms: 20_000, everyMs: 50 })
  t.notOk(lines().some(l => /missed execution/i.test(JSON.stringify(l))), 'nothing says the run was missed')
  run.child.kill('SIGTERM')
  t.equal(await run.exited, 0)
})
