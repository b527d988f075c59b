/**
 * The Node.js range epx runs on (`engines.node` of the manifest and of package.json;
 * DECISIONS.md "Robustness": >= 20.20.2, the last HTTP/TLS fixes of the 20 line). An
 * older Node would not fail loudly, it would serve with subtle TLS and HTTP bugs: so
 * the loader refuses it, and so does `activate` for hosts that load epx another way.
 * @module
 */
import semver from 'semver'
import { EpxError } from '../errors.ts'

/** Throws EPX_NODE_UNSUPPORTED when `running` (default: this process's Node) is outside `range`. */
export function checkNodeVersion (range: string, running: string = process.versions.node): void {
  if (!semver.satisfies(running, range)) throw new EpxError('EPX_NODE_UNSUPPORTED', [range, running])
}
