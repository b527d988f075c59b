/**
 * Where a configured path points: the data folder holds the configuration, the PKI and
 * the store, and a relative path in the configuration is relative to it.
 * @module
 */
import { isAbsolute, resolve } from 'node:path'

/** A configured path, resolved against the data folder when relative. */
export function inDataDir (dataDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(dataDir, path)
}
