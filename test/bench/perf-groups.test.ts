import t from 'tap'
import { groupOf, REST, sharesOf } from '../../bench/perf-groups.ts'

// bench/README.md "Where POST 1 × 96 goes, E against C": one group a sample, by its stack (leaf first).

t.test('garbage collection and the JIT win wherever they are in the stack', async t => {
  t.equal(groupOf(['v8::internal::ScavengerCollector::CollectGarbage', 'JS:*JsonParser', 'JS:*receiveProgramme x.js:1']), 'garbage collection')
  t.equal(groupOf(['memcpy', 'v8::internal::compiler::Pipeline::Run', 'JS:*handle x.js:2']), 'the JIT')
})

t.test('an allocator at the leaf is malloc and free, whoever called it', async t => {
  t.equal(groupOf(['_int_malloc', 'v8::internal::Heap::AllocateRaw']), 'malloc and free')
  t.equal(groupOf(['memmove', '_int_malloc']), REST, 'only at the leaf')
})

t.test('else the frame nearest the leaf that a group names: node called by epx is node, JavaScript inside a transaction is the write', async t => {
  t.equal(groupOf(['JS:*setHeader node:_http_outgoing:653', 'JS:*handle dist/door-worker.js:12816']), 'node: HTTP, TLS, sockets')
  t.equal(groupOf(['JS:*putBatch dist/door-worker.js:9720', 'JS:*executeTxnCallbacks lmdb/write.js:655', 'mdb_txn_commit']), "the write's JavaScript")
  t.equal(groupOf(['mdb_page_alloc', 'mdb_cursor_put', 'JS:*putBatch dist/door-worker.js:9720']), 'the LMDB commit and its flush')
  t.equal(groupOf(['finish_task_switch.isra.0', 'schedule', 'epoll_wait']), REST)
  t.equal(groupOf(['Builtins_FindOrderedHashMapEntry', 'JS:*match file:///srv/epx/dist/door-worker.js:12313', 'JS:*parserOnIncoming node:_http_server:1026']),
    "epx's own JavaScript: the route, authentication, the store's read, metrics and receipts", 'a builtin epx called is epx\'s, node above it or not')
})

t.test("samples are counted by thread: the door's and the others", async t => {
  const text = [
    'epx-door 100/101 24132.1: 250000 cpu-clock:\n\t 1 JsonParser<uint8_t>::ParseJson (/usr/bin/node)\n',
    'node 100/100 24132.2: 250000 cpu-clock:\n\t 2 mdb_txn_commit (/x/lmdb.node)\n',
    'node 100/102 24132.3: 250000 cpu-clock:\n\t 3 mdb_page_alloc (/x/lmdb.node)\n',
  ].join('\n')
  const { total, shares } = sharesOf(text)
  t.equal(total, 3)
  t.same(shares.sort((a, b) => a.samples - b.samples), [
    { thread: 'door', group: "the body's reading (JSON.parse, or E's reader of the bytes)", samples: 1 },
    { thread: 'other threads', group: 'the LMDB commit and its flush', samples: 2 },
  ])
})
