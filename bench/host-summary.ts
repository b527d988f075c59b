/**
 * The host probe's figures (`host-probe.ts`) as targets and lines of the report, and the
 * counts per request that do not depend on time.
 * @module
 */
import { fmt, SCENARIOS, SERVERS, spread, type Sample, type Target } from './report.ts'
import { DELAY_MAX_MS, DELAY_P99_OVER_QUIET_MS, LOOP_CASES, MAIN_THREAD_US, type Delay, type HostProbe } from './host-probe.ts'
import { roundsTarget, valueTarget } from './targets.ts'

/**
 * E's host figures against their targets (bench/README.md "Targets"; E with the plugin's default: the door in its
 * worker thread); A's figures are the note: what TLS and HTTP alone cost a loop that serves them.
 */
export function hostTargets (h: HostProbe | undefined): Target[] {
  const out: Target[] = []
  const why = h ? undefined : 'left out (--only)'
  const quiet = h?.loop.E?.quiet
  const a = h?.loop.A
  for (const what of LOOP_CASES.slice(1)) {
    const e = h?.loop.E?.[what]
    const failed = h?.failures[`E|${what}`] ?? h?.failures['E|quiet']
    const ref = a?.[what] && a.quiet ? `A: p99 ${a[what]!.p99Ms.toFixed(1)} ms (quiet ${a.quiet.p99Ms.toFixed(1)}), max ${a[what]!.maxMs.toFixed(1)} ms` : 'A not measured'
    const over = e && quiet ? e.p99Ms - quiet.p99Ms : undefined
    out.push(valueTarget(`Loop delay, ${what}: E p99 − quiet p99`, DELAY_P99_OVER_QUIET_MS, 'ms', over,
      over === undefined ? why ?? failed : `p99 ${e!.p99Ms.toFixed(1)} ms, quiet ${quiet!.p99Ms.toFixed(1)} ms${answered(e!, a?.[what])}${waited(e!)}; ${ref}; the client at nice ${h!.clientNice}`))
    out.push(valueTarget(`Loop delay, ${what}: E max`, DELAY_MAX_MS, 'ms', e?.maxMs, e ? undefined : why ?? failed))
  }
  for (const scenario of ['GET 200', 'POST 1×96'] as const) {
    for (const log of ['logOn', 'logOff'] as const) {
      const values = h?.mainThread[scenario][log] ?? []
      const raw = spread(h?.mainThread[scenario][log === 'logOn' ? 'rawLogOn' : 'rawLogOff'] ?? [])
      const idleMsPerS = spread((h?.idle[log] ?? []).map(us => us / 1000))
      const limit = MAIN_THREAD_US[log]
      out.push(roundsTarget(`E main thread µs/req, ${scenario}, log ${log === 'logOn' ? 'on' : 'off'}`, limit, 'µs', values, `≤ ${limit} µs`,
        values.length
          ? `Linux schedstat of the main thread less its idle CPU (${fmt(idleMsPerS, 1)} ms/s); as read ${fmt(raw, 1)} µs`
          : why ?? h?.failures[`E|main thread ${scenario} ${log}`] ?? h?.failures[`E|main thread idle ${log}`] ?? h?.failures['E, log off']))
    }
  }
  return out
}

/** `, 9,400 answers/s (A 10,100)`: the load the window put on each server. */
function answered (e: Delay, a: Delay | undefined): string {
  if (e.answersPerS === undefined) return ''
  return `, ${Math.round(e.answersPerS).toLocaleString('en')} answers/s${a?.answersPerS === undefined ? '' : ` (A ${Math.round(a.answersPerS).toLocaleString('en')})`}`
}

/** `; the main thread ran 21 ms and waited 314 ms for a core (117 µs a run)`: where its delay went. */
function waited (d: Delay): string {
  const m = d.main
  return m ? `; the main thread ran ${m.runMs.toFixed(0)} ms and waited ${m.waitMs.toFixed(0)} ms for a core (${(m.waitMs * 1000 / Math.max(1, m.runs)).toFixed(0)} µs a run)` : ''
}

export function hostLines (h: HostProbe): string[] {
  const lines = [`Host probe (inside the server process, monitorEventLoopDelay at 1 ms; the load client at nice ${h.clientNice}): event-loop delay p50 / p99 / max ms`]
  for (const name of ['A', 'E'] as const) {
    const l = h.loop[name]
    if (!l) continue
    lines.push(`  ${name}  ` + LOOP_CASES.map(c => l[c] ? `${c} ${l[c]!.p50Ms.toFixed(1)} / ${l[c]!.p99Ms.toFixed(1)} / ${l[c]!.maxMs.toFixed(1)}` : `${c} n/a`).join('; '))
    if (LOOP_CASES.some(c => l[c]?.main)) {
      lines.push(`     its main thread ran / waited for a core, ms: ` + LOOP_CASES.map(c => l[c]?.main ? `${c} ${l[c]!.main!.runMs.toFixed(0)} / ${l[c]!.main!.waitMs.toFixed(0)}` : `${c} n/a`).join('; '))
    }
  }
  const perConn = (['A', 'E'] as const).map(n => h.loop[n]?.['new connections']?.cpuPerConnectionUs).map((us, k) => us === undefined ? undefined : `${'AE'[k]} ${us.toFixed(0)} µs`).filter(Boolean)
  if (perConn.length) lines.push(`CPU per new connection (TLS 1.3 full handshake and one GET, whole process): ${perConn.join(', ')}`)
  const hs = h.handshake
  const full = spread(hs.fullUs)
  const resumed = spread(hs.resumedUs)
  if (full && resumed) {
    lines.push(`E CPU per new TLS 1.2 connection (one GET, whole process): full handshake ${fmt(full, 0)} µs, resumed ${fmt(resumed, 0)} µs ` +
      `(${(resumed.median / full.median).toFixed(2)} of a full one); ${hs.resumed}/${hs.offered} offered sessions resumed`)
  }
  for (const [k, v] of Object.entries(h.failures)) lines.push(`  host probe ${k} failed: ${v}`)
  return lines
}

/** Per scenario and server, medians over rounds of what does not depend on time, and the main thread's share. */
export function countLines (samples: readonly Sample[]): string[] {
  const lines: string[] = []
  for (const sc of SCENARIOS) {
    const per = SERVERS.map(sv => {
      const mine = samples.filter(s => s.scenario === sc && s.server === sv)
      if (!mine.length) return undefined
      const heap = spread(mine.map(s => s.heapBytesPerReq))
      const main = spread(mine.map(s => s.mainThreadPerReqUs ?? NaN))
      return `${sv} ${fmt(heap, 0)} B` + (main ? `, main thread ${fmt(main, 0)} µs` : '')
    }).filter(Boolean)
    if (per.length) lines.push(`  ${sc}: ${per.join('; ')}`)
    for (const sv of ['E', 'E-pg'] as const) {
      const e = samples.filter(s => s.scenario === sc && s.server === sv && s.threadPerReqUs)
      const names = [...new Set(e.flatMap(s => Object.keys(s.threadPerReqUs!)))].sort()
      if (e.length && names.length) {
        lines.push(`    ${sv}'s CPU µs per request by thread: ${names.map(n => `${n} ${fmt(spread(e.map(s => s.threadPerReqUs![n] ?? 0)), 0)}`).join(', ')}`)
      }
    }
    // Context switches per request, voluntary / preempted, of the thread that serves (A's main, E's door).
    const sw = SERVERS.map(sv => {
      const mine = samples.filter(s => s.scenario === sc && s.server === sv && s.switchesPerReq)
      const thread = sv.startsWith('E') && mine.some(s => s.switchesPerReq!['epx-door']) ? 'epx-door' : 'main'
      if (!mine.length) return undefined
      const of = (k: 'voluntary' | 'preempted') => fmt(spread(mine.map(s => s.switchesPerReq![thread]?.[k] ?? 0)), 2)
      return `${sv} (${thread}) ${of('voluntary')} / ${of('preempted')}`
    }).filter(Boolean)
    if (sw.length) lines.push(`    Context switches per request, voluntary / preempted: ${sw.join('; ')}`)
  }
  return lines.length ? ['V8 heap bytes allocated per request on the main thread (does not depend on time), and main-thread CPU per request:', ...lines] : []
}
