/**
 * `epx store backup DIR`: a consistent copy of the store, made while `epx start` (or a
 * solver with the plugin) runs, written atomically (store/backup.ts).
 * @module
 */
import { backupStore } from '../../store/backup.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'

/** How to put a backup back, for `--help`, the command's output and docs/operating.md. */
export const RESTORE_STEPS = 'to restore: stop epx, move the store folder aside (<data>/epx.lmdb, store.path), copy the backup folder in its place, start epx'

const backupSpec: CommandSpec = {
  usage: 'epx store backup DIR',
  summary: 'copy the store to a new folder, consistently, while the service runs',
  about: [
    'Writes a consistent copy of the store (LMDB snapshot and revision files) to the new',
    'folder DIR, while the service runs: DIR appears only once the copy is whole, and an',
    'existing DIR is never overwritten.',
    `To restore: stop epx, move the store folder (<data>/epx.lmdb) aside, copy DIR in its`,
    'place, start epx.',
  ].join('\n'),
  positionals: ['DIR'],
}

const backup = defineCommand(backupSpec, async (args, io) => {
  const result = await withStore(io.dataDir, store => backupStore(store, args.positionals[0]!))
  io.out(`store backed up to ${result.dir} (${result.segmentFiles} revision file(s)); ${RESTORE_STEPS}`)
})

export const storeSubcommands: readonly Command[] = [backup]
