#!/usr/bin/env node
/**
 * `node scripts/throw-in-door.mjs [PORT]`: an operator's worst day, by hand. Attaches to
 * the inspector of a running epx (opened with `kill -USR1 <pid>`; PORT default 9229),
 * lists its worker threads, and throws an uncaught exception on the event loop of the one
 * that listens (the door: not its standby, not the programme parser), as one would type
 * it in Chrome DevTools' console for that thread. The solver's process must keep running
 * and its door answer again (docs/plugin-contract.md, "A fault of the door's thread").
 * Loopback only.
 */
import { request, WebSocket } from 'undici'

const port = Number(process.argv[2] ?? 9229)
const list = await (await request(`http://127.0.0.1:${port}/json/list`)).body.json()
const ws = new WebSocket(list[0].webSocketDebuggerUrl)
await new Promise((resolve, reject) => { ws.onopen = resolve; ws.onerror = reject })
let id = 0
const workers = new Map()
const replies = new Map()
ws.onmessage = e => {
  const m = JSON.parse(String(e.data))
  if (m.method === 'NodeWorker.attachedToWorker') workers.set(m.params.sessionId, m.params.workerInfo)
  if (m.method === 'NodeWorker.receivedMessageFromWorker') {
    const inner = JSON.parse(m.params.message)
    if (inner.id !== undefined) replies.get(inner.id)?.(inner.result?.result?.value)
  }
}
const send = (method, params) => ws.send(JSON.stringify({ id: ++id, method, params }))
send('NodeWorker.enable', { waitForDebuggerOnStart: false })
await new Promise(resolve => setTimeout(resolve, 500))
/** Evaluates `expression` in a worker, resolves with its value. */
const evaluate = (sessionId, expression) => new Promise(resolve => {
  const inner = ++id
  replies.set(inner, resolve)
  send('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id: inner, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }) })
  setTimeout(() => resolve(undefined), 2000)
})
let thrown = 0
for (const [sessionId, info] of workers) {
  const listens = await evaluate(sessionId, "process.getActiveResourcesInfo().includes('TCPServerWrap')")
  console.log(`${info.title} (${info.url}): ${listens ? 'listens: throwing there' : 'does not listen'}`)
  if (listens) {
    await evaluate(sessionId, "setTimeout(() => { throw new Error('thrown from the inspector by the operator') }, 0); 'thrown'")
    thrown++
  }
}
console.log(`${workers.size} worker thread(s), an exception thrown in ${thrown}`)
ws.close()
