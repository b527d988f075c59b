/**
 * Company records: id, name, status, certificate binding and perimeter.
 * The rules that use them live in `auth/tenancy.ts`.
 * @module
 */
import type { Store } from './open-store.ts'
import { EpxError } from '../errors.ts'
import { openGeneration } from './generation.ts'

export interface CompanyRecord {
  readonly id: string
  readonly name: string
  readonly status: 'active' | 'suspended'
  /** Canonical DN the client certificate must carry, e.g. `CN=acme-bsp,O=ACME`. */
  readonly certSubject: string
  /** Optional pinned SHA-256 fingerprint (`AB:CD:…`, as node prints it). */
  readonly certFingerprint256?: string
  /** Sites the company may see and program. */
  readonly perimeter: 'all' | readonly string[]
  readonly createdAt: string
}

export const COMPANY_ID = /^[a-z0-9][a-z0-9-]{1,62}$/

export function openCompanies (store: Store) {
  const db = store.db<CompanyRecord>('companies')
  const generation = openGeneration(store)
  return {
    get (id: string): CompanyRecord | undefined {
      store.guard()
      return db.get(id)
    },
    list (): CompanyRecord[] {
      store.guard()
      // String keys only: the msgpack shapes live under a symbol key of the same db.
      return [...db.getRange()].filter(e => typeof e.key === 'string').map(e => e.value)
    },
    async add (c: CompanyRecord): Promise<void> {
      const added = await store.writeDurable(() => {
        if (db.get(c.id)) return false
        store.checkWrite()
        db.putSync(c.id, c)
        generation.bump()
        return true
      })
      if (!added) throw new EpxError('EPX_CONFLICT', [`company ${c.id} already exists`])
    },
    async update (id: string, change: (c: CompanyRecord) => CompanyRecord): Promise<CompanyRecord> {
      const next = await store.writeDurable(() => {
        const c = db.get(id)
        if (!c) return undefined
        const n = change(c)
        store.checkWrite()
        db.putSync(id, n)
        generation.bump()   // a suspension or a new binding reaches cached callers
        return n
      })
      if (!next) throw new EpxError('EPX_NOT_FOUND', [`no company ${id}`])
      return next
    },
  }
}
export type Companies = ReturnType<typeof openCompanies>
