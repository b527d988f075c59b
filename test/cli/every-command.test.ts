/**
 * Every command of `epx` (`epx-bsp`'s are its `epx bsp` ones), found by walking the listings rather than
 * named here, meets the two mistakes no command may answer with a stack trace: a reader of
 * its output gone away (`epx instructions list | head`) and an option it does not know.
 * One child process runs them all, its stdout closed before the first write: an EPIPE
 * left unhandled would end it, with a stack, at the first command that writes.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../helpers/cli.ts'

const WALK = `
import { commands, runCli } from ${JSON.stringify(new URL('dist/cli.js', `file://${ROOT}/`).href)}
const captured = () => { const lines = []; return { lines, io: { err: l => { lines.push(l) }, dataDir: process.cwd() } } }
const report = []
async function one (run, words) {
  // --help writes to the real stdout, whose reader is gone.
  const help = captured()
  const helpCode = await run([...words, '--help'], help.io)
  const bogus = captured()
  const bogusCode = await run([...words, '--bogus'], { ...bogus.io, out: l => { bogus.lines.push(l) } })
  report.push({ words, helpCode, helpErr: help.lines, bogusCode, bogusErr: bogus.lines })
}
async function walk (run, prefix, names) {
  for (const name of names) {
    const listing = captured()
    await run([...prefix, name, '--help'], { ...listing.io, out: l => { listing.lines.push(l) } })
    const text = listing.lines.join('\\n')
    const subs = text.includes('Subcommands:') ? [...text.split('Subcommands:')[1].matchAll(/^  (\\S+) /gm)].map(m => m[1]) : []
    if (subs.length) { await one(run, [...prefix, name]); for (const s of subs) await one(run, [...prefix, name, s]) }
    else await one(run, [...prefix, name])
  }
}
await walk(runCli, [], commands.map(c => c.name))
await new Promise(r => setTimeout(r, 50))   // an EPIPE is emitted on a later tick
process.stderr.write(JSON.stringify(report))
`

t.test('every command, its reader gone and an unknown option: one message and its exit code, never a stack', async t => {
  const dir = t.testdir()
  writeFileSync(join(dir, 'walk.mjs'), WALK)
  const child = spawn(process.execPath, [join(dir, 'walk.mjs')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } })
  child.stdout.destroy()
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', d => { stderr += d })
  const code = await new Promise(resolve => child.on('close', resolve))
  t.equal(code, 0, `the walk ends: ${stderr.slice(0, 2000)}`)
  const report = JSON.parse(stderr) as Array<{ words: string[]; helpCode: number; helpErr: string[]; bogusCode: number; bogusErr: string[] }>
  t.ok(report.length >= 40, `${report.length} commands walked`)
  t.ok(report.some(r => r.words.join(' ') === 'instructions list') && report.some(r => r.words.join(' ') === 'bsp realise') && report.some(r => r.words.join(' ') === 'store copy'))
  for (const r of report) {
    const name = r.words.join(' ')
    t.same([r.helpCode, r.helpErr], [0, []], `${name} --help, its reader gone: exit 0, nothing on stderr`)
    t.equal(r.bogusCode, 2, `${name} --bogus: exit 2`)
    t.match(r.bogusErr[0], /^epx: unknown (option '--bogus'|subcommand '.*--bogus')/, `${name} --bogus: the first line names it`)
    t.notMatch(r.bogusErr.join('\n'), /\n\s+at |unexpected error/, `${name} --bogus: no stack`)
  }
})
