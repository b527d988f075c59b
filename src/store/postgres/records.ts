/**
 * How a record of the store travels to and from PostgreSQL: the same sub-database,
 * key and value as in LMDB, in encodings that do not depend on one process's state.
 * - key: ordered-binary, the encoding lmdb-js orders its keys by, so `ORDER BY key` in
 *   PostgreSQL is the order of `getRange` in LMDB;
 * - value: msgpack without shared record structures (LMDB's msgpack databases share
 *   structures within one file, which another instance's file does not have), or the
 *   bytes themselves for a binary sub-database.
 * @module
 */
import { createHash } from 'node:crypto'
import { Packr } from 'msgpackr'
import type { TableSum } from '../engine.ts'
import { fromBufferKey, toBufferKey } from 'ordered-binary'
import type { Key } from 'lmdb'

const packr = new Packr({ useRecords: false })

export function encodeKey (key: Key): Buffer {
  return toBufferKey(key as Parameters<typeof toBufferKey>[0])
}

export function decodeKey (bytes: Uint8Array): Key {
  return fromBufferKey(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) as Key
}

export function encodeValue (value: unknown, binary: boolean): Buffer {
  if (binary) {
    const b = value as Uint8Array
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength)
  }
  return packr.pack(value)
}

export function decodeValue (bytes: Uint8Array, binary: boolean): unknown {
  return binary ? Buffer.from(bytes) : packr.unpack(bytes)
}

/**
 * A sub-database's fingerprint: how many records and a SHA-256 over its records in key
 * order (each key and value length-prefixed), computed alike from LMDB and from
 * PostgreSQL, so a copy is verified record for record (`epx store copy`).
 */
export type { TableSum }

export function tableSum (records: Iterable<{ key: Uint8Array; value: Uint8Array }>): TableSum {
  const summer = tableSummer()
  for (const r of records) summer.add(r.key, r.value)
  return summer.sum()
}

/** The same fingerprint fed a record at a time (a table read in pages, a copy as it goes). */
export function tableSummer (): { add(key: Uint8Array, value: Uint8Array): void; sum(): TableSum } {
  const hash = createHash('sha256')
  const len = Buffer.alloc(4)
  let n = 0
  return {
    add (key, value) {
      len.writeUInt32BE(key.byteLength); hash.update(len); hash.update(key)
      len.writeUInt32BE(value.byteLength); hash.update(len); hash.update(value)
      n++
    },
    sum: () => ({ records: n, sha256: hash.digest('hex') }),
  }
}
