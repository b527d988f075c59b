/**
 * Child processes of the bench and the campaign: forked (with tsx unless already built),
 * talked to over IPC, every wait bounded by a timeout, and always ended (politely, then
 * SIGKILL) so a run can never hang.
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process'

export interface Reply { type: string; [k: string]: unknown }

export class Child {
  readonly name: string
  readonly proc: ChildProcess
  #inbox: Reply[] = []
  #waiters: Array<() => void> = []
  #stderr = ''
  #exited: Promise<number | null>

  /** `tsx: false` for a file already built to JavaScript (E: no TypeScript loader in the process). */
  constructor (name: string, file: string, opts: { env?: Record<string, string>; execArgv?: string[]; tsx?: boolean } = {}) {
    this.name = name
    this.proc = fork(file, [], {
      execArgv: [...(opts.tsx === false ? [] : ['--import=tsx']), ...(opts.execArgv ?? [])],
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    this.proc.stderr!.on('data', (d: Buffer) => { this.#stderr = (this.#stderr + d.toString()).slice(-4000) })
    this.proc.on('message', (m: Reply) => { this.#inbox.push(m); this.#wake() })
    this.#exited = new Promise(resolve => this.proc.on('exit', code => { this.#wake(); resolve(code) }))
  }

  #wake (): void {
    const w = this.#waiters
    this.#waiters = []
    for (const f of w) f()
  }

  get alive (): boolean { return this.proc.exitCode === null && this.proc.signalCode === null }

  /** The last lines the child wrote on stderr (why it failed, usually). */
  get stderrTail (): string { return this.#stderr.trim().split('\n').slice(-6).join('\n') }

  send (msg: object): void {
    if (!this.alive || !this.proc.connected) throw new Error(`${this.name} is not running${this.#why()}`)
    this.proc.send(msg)
  }

  #why (): string {
    const tail = this.stderrTail
    return tail ? `: ${tail}` : ''
  }

  /** The next message of `type`; rejects on `failed`/`error` messages, exit, or timeout. */
  async next (type: string, timeoutMs: number): Promise<Reply> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const i = this.#inbox.findIndex(m => m.type === type || m.type === 'failed' || m.type === 'error')
      if (i >= 0) {
        const m = this.#inbox.splice(i, 1)[0]!
        if (m.type !== type) throw new Error(String(m.message ?? `${this.name} failed`))
        return m
      }
      if (!this.alive) throw new Error(`${this.name} exited (code ${this.proc.exitCode ?? this.proc.signalCode})${this.#why()}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`${this.name}: no '${type}' within ${timeoutMs} ms${this.#why()}`)
      await new Promise<void>(resolve => {
        const t = setTimeout(resolve, left)
        this.#waiters.push(() => { clearTimeout(t); resolve() })
      })
    }
  }

  /** Sends and waits for the answer. */
  async ask (msg: object, type: string, timeoutMs: number): Promise<Reply> {
    this.send(msg)
    return this.next(type, timeoutMs)
  }

  /** Asks the child to exit (so a --cpu-prof profile gets written), then kills it. */
  async stop (graceMs = 5000): Promise<void> {
    if (!this.alive) return
    try { this.send({ type: 'exit' }) } catch { /* already gone */ }
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs)
    await this.#exited
    clearTimeout(timer)
  }

  kill (): void {
    if (this.alive) this.proc.kill('SIGKILL')
  }
}
