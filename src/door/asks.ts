/**
 * What the door's worker asks of the solver's thread, one answer per question
 * (docs/plugin-contract.md). The console and metrics listeners run in the door's worker, but some of what
 * they serve belongs to the host: the solver's sites (the console's site chooser),
 * "Publier maintenant" (the publisher calls `solver.needs`, and runs never overlap with
 * the schedule's), the prom-client registry (a host may share its own) and the readiness
 * checks that read the solver's thread's state. The messages that carry these are
 * `ask` and `answer` (protocol.ts).
 * @module
 */
import { errorData, errorFrom, type AnswerMessage, type Ask, type AskAnswers, type AskMessage, type Asks } from './protocol.ts'

/** Main side: answers one question (a failure, or an answer that cannot cross, is sent as an error). */
export function answerAsk (answers: AskAnswers, m: AskMessage, send: (m: AnswerMessage) => void): void {
  const fn = answers[m.q.ask] as (q: Ask) => Promise<unknown>
  const failed = (err: unknown) => { try { send({ type: 'answer', id: m.id, error: errorData(err) }) } catch { /* the worker is gone */ } }
  Promise.resolve().then(() => fn(m.q)).then(
    a => { try { send({ type: 'answer', id: m.id, a }) } catch (err) { failed(err) } },
    failed)
}

export interface Asker {
  /** Asks the solver's thread; `withinMs`: fails with a message saying so when it takes longer. */
  ask<K extends keyof Asks>(q: { ask: K } & Asks[K]['q'], withinMs?: number): Promise<Asks[K]['a']>
  /** Hands an answer to its question. */
  answered(m: AnswerMessage): void
  /** Fails every question still open (the door is closing). */
  failAll(why: string): void
}

/** Door side: questions with ids, answered in any order. */
export function asker (post: (m: AskMessage) => void): Asker {
  let next = 0
  const open = new Map<number, { resolve: (a: any) => void; reject: (e: unknown) => void; timer?: NodeJS.Timeout }>()
  const settle = (id: number) => {
    const p = open.get(id)
    open.delete(id)
    if (p?.timer) clearTimeout(p.timer)
    return p
  }
  return {
    ask (q, withinMs) {
      const id = next++
      return new Promise((resolve, reject) => {
        const timer = withinMs === undefined ? undefined : setTimeout(() => {
          settle(id)?.reject(new Error(`the solver's thread did not answer within ${withinMs} ms`))
        }, withinMs)
        open.set(id, { resolve, reject, timer })
        post({ type: 'ask', id, q })
      })
    },
    answered (m) {
      const p = settle(m.id)
      if (m.error) p?.reject(errorFrom(m.error))
      else p?.resolve(m.a)
    },
    failAll (why) {
      for (const id of [...open.keys()]) settle(id)!.reject(new Error(why))
    },
  }
}
