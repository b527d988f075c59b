/**
 * What the configuration schema cannot say about `store.postgres`: which keys go
 * together, what a connection string or a member of `hosts` may hold. Checked when the
 * configuration is loaded (config.ts), every problem at once, each naming its key.
 * @module
 */
import type { StoreConfig } from '../../config-schema.ts'
import { parseConnectionString } from './connection-string.ts'
import { connectionStringHosts, formatMember, parameterHosts, parseMember, type Member } from './primary.ts'

export const PASSWORD_IN_CONFIG = '/store/postgres: a password is never written in the configuration; ' +
  'put it in a file readable by epx only (store.postgres.passwordFile) or in an environment variable (store.postgres.passwordEnv)'

/** What the schema cannot say about the store: which keys go together. */
export function postgresOptionProblems (store: StoreConfig): string[] {
  const pg = store.postgres
  if (!pg) {
    return store.kind === 'postgres'
      ? ['/store: kind "postgres" needs store.postgres, the database to use: { "connectionString": "postgresql://user@host/database", "passwordFile": "..." } or { "host", "port", "database", "user", ... }']
      : []
  }
  const problems: string[] = []
  const fields = (['host', 'port', 'hosts', 'database', 'user'] as const).filter(k => pg[k] !== undefined)
  if (pg.connectionString !== undefined) {
    if (fields.length) problems.push(`/store/postgres: give either connectionString or ${fields.join(', ')}, not both`)
    let parsed: ReturnType<typeof parseConnectionString> | undefined
    try {
      const listed = connectionStringHosts(pg.connectionString)
      parsed = parseConnectionString(listed.single)
      duplicates(listed.members ?? parameterHosts(parsed.host ?? '', parsed.port ?? undefined) ?? [], '/store/postgres/connectionString', problems)
    } catch (err) {
      problems.push(`/store/postgres/connectionString is not a connection string (${(err as Error).message}); expected postgresql://user@host:port/database, or postgresql://user@host1:port1,host2:port2/database for a cluster`)
    }
    const attrs = (parsed as Record<string, unknown> | undefined)?.target_session_attrs
    if (attrs !== undefined && attrs !== 'read-write' && attrs !== 'primary') {
      problems.push(`/store/postgres/connectionString: target_session_attrs=${String(attrs)} is not for epx, which writes: with several hosts it connects to the one accepting writes (read-write)`)
    }
    if (parsed?.password) problems.push(PASSWORD_IN_CONFIG.replace('/store/postgres: a password', '/store/postgres/connectionString: a password'))
    const ssl = parsed ? Object.keys(parsed).filter(k => /^ssl/.test(k)) : []
    if (ssl.some(k => k !== 'ssl')) problems.push(`/store/postgres/connectionString: TLS is set in store.postgres.tls (mode, caFile, certFile, keyFile), not with ${ssl.filter(k => k !== 'ssl').join(', ')}`)
  } else if (pg.hosts !== undefined) {
    const both = (['host', 'port'] as const).filter(k => pg[k] !== undefined)
    if (both.length) problems.push(`/store/postgres: give either hosts or ${both.join(' and ')}, not both (each member of hosts carries its port: host:port)`)
    const members: Member[] = []
    pg.hosts.forEach((text, i) => {
      try { members.push(parseMember(text)) } catch (err) { problems.push(`/store/postgres/hosts/${i} is not a host or host:port: ${(err as Error).message}`) }
    })
    duplicates(members, '/store/postgres/hosts', problems)
  } else if (pg.host === undefined) {
    problems.push('/store/postgres needs connectionString, host (with port, database and user as needed), or hosts (the members of a cluster)')
  }
  if (pg.passwordFile !== undefined && pg.passwordEnv !== undefined) {
    problems.push('/store/postgres: give either passwordFile or passwordEnv, not both')
  }
  const tls = pg.tls
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    problems.push('/store/postgres/tls: certFile and keyFile go together (the client certificate and its key)')
  }
  if (tls.mode === 'disable' && (tls.caFile ?? tls.certFile) !== undefined) {
    problems.push('/store/postgres/tls: mode "disable" uses no certificate; remove caFile, certFile and keyFile or choose mode "require" or "verify-full"')
  }
  return problems
}

/** A member listed twice is a typing error, not a second chance. */
function duplicates (members: readonly Member[], where: string, problems: string[]): void {
  const seen = new Set<string>()
  for (const m of members) {
    const key = formatMember(m)
    if (seen.has(key)) problems.push(`${where}: ${key} is listed twice`)
    seen.add(key)
  }
}
