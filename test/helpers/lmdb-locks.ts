/**
 * This process's POSIX locks on a store's lock.mdb, as Linux lists them in /proc/locks:
 * LMDB knows which processes use a store by those locks (a shared one on the file's first
 * byte for as long as the store is open, one at the process id's offset once it reads).
 *
 *   ownLmdbLocks(storeDir)      // ['POSIX  ADVISORY  READ 1234 fe:00:56 0 0', ...]
 *   holdsSharedLmdbLock(storeDir)
 * @module
 */
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

export function ownLmdbLocks (storeDir: string): string[] {
  const ino = statSync(join(storeDir, 'lock.mdb')).ino
  return readFileSync('/proc/locks', 'utf8').split('\n')
    .filter(l => l.includes(`:${ino} `) && l.split(/\s+/).includes(String(process.pid)))
    .map(l => l.replace(/^\d+:\s*/, ''))   // its line numbers move with other processes' locks
}

/** Whether this process holds LMDB's shared lock on lock.mdb: how other processes know it uses the store. */
export function holdsSharedLmdbLock (storeDir: string): boolean {
  return ownLmdbLocks(storeDir).some(l => / READ .* 0 0$/.test(l))
}
