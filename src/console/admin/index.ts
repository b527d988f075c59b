/** The admin pages; every route of theirs is `access: 'admin'`. */
import type { ConsolePage } from '../deps.ts'
import { companiesAdmin } from './companies.ts'
import { publishAdmin } from './publish.ts'
import { usersAdmin } from './users.ts'

export const adminPages: readonly ConsolePage[] = [companiesAdmin, usersAdmin, publishAdmin]
