/**
 * `epx init`: the data folder, the development PKI (server CA, server certificate for
 * localhost and 127.0.0.1, client CA) and `epx.config.json`. Idempotent: it creates
 * only what is missing and never overwrites a key or the configuration.
 * @module
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { ensureDevPki } from '../../auth/pki.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import type { CliIo } from '../io.ts'
import { initialSettings, settingsPath } from '../settings.ts'

const spec: CommandSpec = {
  usage: 'epx init',
  about: [
    'Creates the data folder, a development PKI in <data>/pki (ca.crt: the server CA;',
    'server.crt/server.key for localhost, 127.0.0.1 and ::1; client-ca.crt/client-ca.key:',
    'the CA that signs BSP client certificates) and <data>/epx.config.json.',
    'Running it again creates only what is missing; nothing is overwritten.',
  ].join('\n'),
}

/** Creates what is missing; returns the paths it created (empty when all existed). */
export function initDataDir (dataDir: string): string[] {
  const created: string[] = []
  if (!existsSync(dataDir)) {
    mkdirSync(dataDir, { recursive: true })
    created.push(dataDir)
  }
  created.push(...ensureDevPki(dataDir))
  const file = settingsPath(dataDir)
  if (!existsSync(file)) {
    // flag 'wx': two concurrent inits never clobber each other's file.
    writeFileSync(file, JSON.stringify(initialSettings(), null, 2) + '\n', { flag: 'wx' })
    created.push(file)
  }
  return created
}

export function reportInit (dataDir: string, created: readonly string[], io: CliIo): void {
  if (created.length === 0) {
    io.out(`${dataDir} is already initialized; nothing to create`)
    return
  }
  for (const path of created) io.out(`created ${path}`)
  io.out(`initialized ${dataDir}`)
}

export const initCommand = defineCommand(spec, async (_args, io) => {
  reportInit(io.dataDir, initDataDir(io.dataDir), io)
})
