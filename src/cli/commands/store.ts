/**
 * `epx store backup DIR`: a consistent copy of the store, made while `epx start` (or a
 * solver with the plugin) runs, written atomically (store/backup.ts).
 * @module
 */
import { backupStore } from '../../store/backup.ts'
import { commandGroup, parseCommand, type CommandSpec } from '../args.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'

/** How to put a backup back, for `--help`, the command's output and the README. */
export const RESTORE_STEPS = 'to restore: stop epx, move the store folder aside (<data>/epx.lmdb, store.path), copy the backup folder in its place, start epx'

const backupSpec: CommandSpec = {
  usage: 'epx store backup DIR',
  about: [
    'Writes a consistent copy of the store (LMDB snapshot and revision files) to the new',
    'folder DIR, while the service runs: DIR appears only once the copy is whole, and an',
    'existing DIR is never overwritten.',
    `To restore: stop epx, move the store folder (<data>/epx.lmdb) aside, copy DIR in its`,
    'place, start epx.',
  ].join('\n'),
  positionals: ['DIR'],
}

const backup: Command = {
  name: 'backup',
  summary: 'copy the store to a new folder, consistently, while the service runs',
  async run (argv, io) {
    const args = parseCommand(argv, backupSpec, io)
    if (!args) return 0
    const result = await withStore(io.dataDir, store => backupStore(store, args.positionals[0]!))
    io.out(`store backed up to ${result.dir} (${result.segmentFiles} revision file(s)); ${RESTORE_STEPS}`)
    return 0
  },
}

export const storeCommand: Command = commandGroup('store', 'back up the store (see `epx store backup --help` to restore)', [backup])
