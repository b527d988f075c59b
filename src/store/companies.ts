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
  /**
   * SHA-256 fingerprints (`AB:CD:…`, as node prints them) its certificate must have one
   * of; several at once so a renewal has no gap. Absent or empty: the subject decides.
   */
  readonly certPins?: readonly string[]
  /** Sites the company may see and program. */
  readonly perimeter: 'all' | readonly string[]
  readonly createdAt: string
}

export const COMPANY_ID = /^[a-z0-9][a-z0-9-]{1,62}$/

/** The fingerprints pinned for a company (none: the subject decides). */
export function pinsOf (c: CompanyRecord): readonly string[] {
  return c.certPins ?? []
}

/** The company records: what the door and the CLI may ask of them. */
export interface Companies {
  get(id: string): CompanyRecord | undefined
  list(): CompanyRecord[]
  /** EPX_CONFLICT when the id is taken. */
  add(c: CompanyRecord): Promise<void>
  /** Rewrites a record with `change`; EPX_NOT_FOUND when there is no such company. */
  update(id: string, change: (c: CompanyRecord) => CompanyRecord): Promise<CompanyRecord>
  /** Replaces the pins; an update, so the generation moves and open connections see it. */
  setPins(id: string, change: (pins: readonly string[]) => readonly string[]): Promise<CompanyRecord>
}

export function openCompanies (store: Store): Companies {
  const db = store.db<CompanyRecord>('companies')
  const generation = openGeneration(store)
  const companies: Companies = {
    get (id: string): CompanyRecord | undefined {
      return db.get(id)
    },
    list (): CompanyRecord[] {
      // String keys only: the msgpack shapes live under a symbol key of the same db.
      return [...db.getRange()].filter(e => typeof e.key === 'string').map(e => e.value)
    },
    async add (c: CompanyRecord): Promise<void> {
      const added = await store.writeDurable(() => {
        if (db.get(c.id)) return false
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
        db.putSync(id, n)
        generation.bump()   // a suspension or a new binding reaches cached callers
        return n
      })
      if (!next) throw new EpxError('EPX_NOT_FOUND', [`no company ${id}`])
      return next
    },
    setPins (id: string, change: (pins: readonly string[]) => readonly string[]): Promise<CompanyRecord> {
      return companies.update(id, c => ({ ...c, certPins: [...change(pinsOf(c))] }))
    },
  }
  return companies
}
