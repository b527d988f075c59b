/**
 * Where a process's CPU goes, from `perf script` text: each sample is put in one group, and
 * the shares are scaled to the µs a request the same run measured unprofiled. The method of
 * bench/README.md "Where POST 1 × 96 goes, E against C":
 *
 *   NODE_OPTIONS=--perf-basic-prof npm run bench -- --only "POST 1×96" --no-special --servers C,E --rounds 6
 *   perf record -e cpu-clock -g -p <E's or C's pid> -o e.data -- sleep 25     (from round 2 on)
 *   perf script -i e.data > e.txt
 *   node --import=tsx bench/perf-groups.ts e.txt <µs a request>
 *
 * A sample is garbage collection or the JIT wherever those are in its stack, `malloc and
 * free` when its leaf is the allocator's, else the group of the frame nearest the leaf that
 * a group names (a node API called by epx's code is node's; the JavaScript run inside an
 * LMDB transaction is the write's, not LMDB's). What no group names is "the rest".
 * @module
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const MALLOC = /^(_int_malloc|_int_free|malloc|cfree|free|calloc|realloc|malloc_consolidate|unlink_chunk)\b/

/** Named anywhere in a stack, these two win. */
const ANYWHERE: ReadonlyArray<readonly [string, RegExp]> = [
  ['garbage collection', /ArrayBufferSweeper|v8::internal::(Heap::|Scavenger|ScavengerCollector|MarkCompactCollector|ConcurrentMarking|Sweeper|MinorMarkCompact|MinorMS|IncrementalMarking|GCTracer|MemoryAllocator|EvacuateVisitor|Evacuator|PageEvacuation|MarkingVisitor|StackGuard::HandleInterrupts)|PerformGarbageCollection/],
  ['the JIT', /v8::internal::(compiler::|maglev::|baseline::|Compiler::|OptimizingCompileDispatcher|Parser::|PreParser|interpreter::BytecodeGenerator)/],
]

/** The frame nearest the leaf that one of these names decides (in this order, for one frame). */
const NEAREST: ReadonlyArray<readonly [string, RegExp]> = [
  ['the LMDB commit and its flush', /mdb_|lmdb.*\.node|fdatasync|fsync|ext4_|jbd2|WriteWorker|EnvWrap/],
  ["the body's reading (JSON.parse, or E's reader of the bytes)", /JsonParser|JsonParseInternalizer|secure-json-parse|JsonParse|scanProgramme|readEnvelope|readSites|readSlots|readSlotObject|readNumber|isCompactSlot|sameInstants|spellsQuarter|quarterAt/],
  ["the schema and the contract's rules", /validate\d+|checkProgrammeRules|programme-validator|readUtcInstant|utcInstantMs|ucs2length/],
  ['the check against the published needs', /flagsOf|checkSlots|feasib/],
  ["the records' encoding", /encodeInstructionRecords|encodeFlag|msgpackr|Packr|writeKey|ordered-binary/],
  ["the write's JavaScript", /putBatch|appendSync|writeInstructions|putSync|childTransaction|executeTxnCallbacks|runJobs|runOneBatch|saveAndQueue|charge|audit/],
  ["log lines and events to the solver's thread", /logLine|events-out|JS:\*?flush |receipt|pino|postMessage|MessagePort/],
  ['node: HTTP, TLS, sockets', /aesni|gcm|ghash|_http_|TLSWrap|ssl|SSL|tls|crypto|StreamBase|stream_base|llhttp|node::http|LibuvStreamWrap|uv__read|uv__write|uv__stream|tcp_|inet_|ip_|skb|sock_|__sys_|Socket|writev|Readable|Writable|streams\//],
  // Last: what epx's own code runs that no group above names (its bundles, or src/ under tsx).
  ["epx's own JavaScript: the route, authentication, the store's read, metrics and receipts", /\/dist\/[\w-]+\.js|\/\.build\/[\w-]+\.js|\/src\/[\w/-]+\.ts/],
]

export const REST = "the rest: the kernel's scheduling, epoll, hand-offs between threads"

/** The group of one sample, its frames leaf first (`perf script`'s order). */
export function groupOf (frames: readonly string[]): string {
  if (frames[0] !== undefined && MALLOC.test(frames[0])) return 'malloc and free'
  for (const [name, re] of ANYWHERE) if (frames.some(f => re.test(f))) return name
  for (const f of frames) for (const [name, re] of NEAREST) if (re.test(f)) return name
  return REST
}

export interface Share { readonly group: string; readonly thread: 'door' | 'other threads'; readonly samples: number }

/** Samples by group and thread (`epx-door`, the door's thread, or any other) of `perf script` text. */
export function sharesOf (text: string): { total: number; shares: Share[] } {
  const counts = new Map<string, number>()
  let total = 0
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter(l => l.trim() !== '')
    const head = /^\s*(.+?)\s+\d+(?:\/\d+)?\s+[\d.]+:/.exec(lines[0] ?? '')
    if (!head) continue
    const frames = lines.slice(1).map(l => l.trim().replace(/^[0-9a-f]+\s+/, ''))
    const thread = head[1]!.trim() === 'epx-door' ? 'door' : 'other threads'
    const key = `${thread}\t${groupOf(frames)}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
    total++
  }
  const shares = [...counts].map(([key, samples]) => {
    const [thread, group] = key.split('\t') as [Share['thread'], string]
    return { group, thread, samples }
  })
  return { total, shares }
}

function main (): void {
  const [file, us] = process.argv.slice(2)
  if (!file) { console.error('usage: bench/perf-groups.ts <perf script text> [µs a request]'); process.exit(2) }
  const usPerReq = Number(us ?? 0)
  const { total, shares } = sharesOf(readFileSync(file, 'utf8'))
  const byGroup = new Map<string, number>()
  for (const s of shares) byGroup.set(s.group, (byGroup.get(s.group) ?? 0) + s.samples)
  const figure = (n: number) => `${(n / total * 100).toFixed(1).padStart(5)} %${usPerReq ? `${(n / total * usPerReq).toFixed(1).padStart(7)} µs` : ''}`
  console.log(`${total} samples`)
  for (const [group, n] of [...byGroup].sort((a, b) => b[1] - a[1])) console.log(`${figure(n)}  ${group}`)
  console.log('by thread:')
  for (const s of [...shares].sort((a, b) => a.thread.localeCompare(b.thread) || b.samples - a.samples)) console.log(`${figure(s.samples)}  ${s.thread}: ${s.group}`)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main()
