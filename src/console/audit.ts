/**
 * The console's entries in the audit trail: every change an admin or member makes, and
 * every login, with the console user as actor (the CLI records its own, store/audit.ts).
 * @module
 */
import type { AuditAction } from '../store/audit.ts'
import type { ConsoleDeps } from './deps.ts'

export function auditConsole (
  deps: Pick<ConsoleDeps, 'audit' | 'clock'>, user: string, action: AuditAction, subject: string,
  outcome = 'ok', details?: Readonly<Record<string, unknown>>,
): void {
  deps.audit.record({ actor: { kind: 'console', user }, action, subject, outcome, ...(details ? { details } : {}) }, deps.clock.now().getTime())
}
