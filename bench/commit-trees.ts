/**
 * `node --import=tsx bench/commit-trees.ts`: what each B-tree a durable commit touches
 * costs it, on lmdb-js alone (real LMDB in a temporary folder, each commit flushed, as
 * `writeDurable` does). It is why an instruction's record, status and flag share one
 * tree (`src/store/instruction-tree.ts`): an accepted POST's commit touched five trees.
 *
 * Each line: CPU of the whole process (lmdb-js's writer and the flush included) and wall
 * time per commit, median of 5 rounds of 300 commits, for one POST a commit and for three
 * (a group commit under load).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open, type Database, type Key } from 'lmdb'

const dir = mkdtempSync(join(tmpdir(), 'epx-trees-'))
const root = open({ path: dir, maxDbs: 8, compression: false, eventTurnBatching: false })
const trees: Array<Database<Uint8Array, Key>> = Array.from({ length: 5 }, (_, i) => root.openDB({ name: `t${i}`, encoding: 'binary' }))
// Sizes of a one-site × 96 programme's entries: record, status, effective ref, audit record, flag.
const record = Buffer.alloc(1_800, 1)
const small = Buffer.alloc(60, 2)
const audit = Buffer.alloc(300, 3)
const flag = Buffer.alloc(120, 4)

let n = 0
// Trees deep enough to have branch pages, as a store in use has.
for (let b = 0; b < 20; b++) await root.transaction(() => { for (const t of trees) for (let j = 0; j < 500; j++) t.putSync([n++, 's'], record) })

const layouts: Record<string, () => void> = {
  'five trees (record, status, effective, audit, flag)': () => {
    trees[0]!.putSync([n, 's'], record); trees[1]!.putSync([n, 's'], small); trees[2]!.putSync(['d', n], small)
    trees[3]!.putSync([n, 't'], audit); trees[4]!.putSync([n, 's'], flag); n++
  },
  'three trees (record + flag + status, effective, audit)': () => {
    trees[0]!.putSync([n, 's'], record); trees[0]!.putSync([n, 's', 'f'], flag); trees[0]!.putSync([n, 's', 's'], small)
    trees[2]!.putSync(['d', n], small); trees[3]!.putSync([n, 't'], audit); n++
  },
  'three trees without audit and flag (record, status, effective)': () => {
    trees[0]!.putSync([n, 's'], record); trees[1]!.putSync([n, 's'], small); trees[2]!.putSync(['d', n], small); n++
  },
}

const cpu = (): number => { const u = process.cpuUsage(); return u.user + u.system }
const rounds = new Map<string, Array<[number, number]>>()
for (let r = 0; r < 5; r++) {
  for (const perCommit of [1, 3]) {
    for (const [name, write] of Object.entries(layouts)) {
      const c0 = cpu()
      const t0 = performance.now()
      for (let c = 0; c < 300; c++) {
        await root.transaction(() => { for (let p = 0; p < perCommit; p++) write() })
        await root.flushed
      }
      const key = `${perCommit} POST a commit, ${name}`
      rounds.set(key, [...rounds.get(key) ?? [], [(cpu() - c0) / 300, (performance.now() - t0) * 1000 / 300]])
    }
  }
}
for (const [key, rs] of rounds) {
  const mid = (i: 0 | 1): number => rs.map(x => x[i]).sort((a, b) => a - b)[2]!
  console.log(`${key.padEnd(84)} CPU ${mid(0).toFixed(0).padStart(4)} µs, wall ${mid(1).toFixed(0).padStart(4)} µs a commit`)
}
await root.close()
rmSync(dir, { recursive: true, force: true })
