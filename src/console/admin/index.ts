/** The admin pages; every route of theirs is `access: 'admin'`. */
import type { ConsolePage } from '../deps.ts'
import { auditAdmin } from './audit.ts'
import { companiesAdmin } from './companies.ts'
import { deliveriesAdmin } from './deliveries.ts'
import { publishAdmin } from './publish.ts'
import { usersAdmin } from './users.ts'

export const adminPages: readonly ConsolePage[] = [companiesAdmin, usersAdmin, publishAdmin, auditAdmin, deliveriesAdmin]
