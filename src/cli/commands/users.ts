/**
 * `epx user add|list|disable|enable|reset-password`: the web console's accounts
 * (DECISIONS.md "Web console"). A generated password is printed once, alone on the last
 * line of stdout; only its scrypt hash is stored.
 * @module
 */
import { readFileSync } from 'node:fs'
import { addUser, resetPassword, setUserDisabled } from '../../auth/accounts.ts'
import { openUsers, type UserRecord } from '../../store/users.ts'
import { defineCommand, usageError, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { withStore } from '../settings.ts'
import { printList } from '../table.ts'
import { checkCompanyId } from './companies.ts'

const addSpec: CommandSpec = {
  usage: 'epx user add USERNAME (--admin | --company ID) [--password-stdin]',
  summary: 'create a console account; prints a generated password once',
  about: [
    'Creates a web console account: a service admin (--admin: every company, the admin',
    'pages) or a member of one company (--company ID: that company only). Without',
    '--password-stdin a password is generated and printed once, alone on the last line,',
    'and the user must choose its own at its first login. A password from stdin follows',
    'the console\'s rules: 12 to 256 characters, 5 different, not a run (abcdef, 123456),',
    'not containing the username, not a common password.',
    'USERNAME: 2 to 64 letters, digits, ".", "_", "-" or "@" (case-insensitive).',
  ].join('\n'),
  positionals: ['USERNAME'],
  options: {
    admin: { type: 'boolean', help: 'a service admin' },
    company: { type: 'string', arg: 'ID', help: 'the company the user belongs to' },
    'password-stdin': { type: 'boolean', help: 'read the password (the console\'s rules: see above) from stdin' },
  },
}

const add = defineCommand(addSpec, async (args, io) => {
  const admin = args.flag('admin')
  const company = args.string('company')
  if (admin === (company !== undefined)) throw usageError(addSpec, 'give exactly one of --admin or --company ID')
  const companyId = company === undefined ? null : checkCompanyId(company, addSpec)
  // The trailing newline of `echo pw |` is not part of the password.
  const given = args.flag('password-stdin') ? readFileSync(0, 'utf8').replace(/\r?\n$/, '') : undefined
  const { record, password } = await withStore(io.dataDir, store =>
    addUser(store, { username: args.positionals[0]!, admin, companyId, ...(given === undefined ? { mustChangePassword: true } : { password: given }) }, Date.now()))
  io.out(`added ${describe(record)}`)
  if (given === undefined) {
    io.out('the password follows, shown this once; hand it over now:')
    io.out(password)
  }
})

function describe (u: UserRecord): string {
  return `user ${u.username} (${u.admin ? 'service admin' : `member of ${u.companyId}`})`
}

const listSpec: CommandSpec = {
  usage: 'epx user list [--json]',
  summary: 'list the console accounts (never a password or its hash)',
  about: 'Lists the console accounts: username, role, company, state, dates.',
  options: { json: { type: 'boolean', help: 'print a JSON array' } },
}

const list = defineCommand(listSpec, async (args, io) => {
  const users = await withStore(io.dataDir, store => openUsers(store).list())
  // Explicit fields: the hash never leaves the store.
  const shown = users.map(u => ({
    username: u.username, role: u.admin ? 'admin' : 'member', company: u.companyId,
    state: u.disabled ? 'disabled' : 'active', createdAt: u.createdAt, passwordChangedAt: u.passwordChangedAt,
  }))
  printList(io.out, args.flag('json'), shown, {
    empty: "no users yet; add one with 'epx user add USERNAME --admin'",
    header: ['USERNAME', 'ROLE', 'COMPANY', 'STATE', 'CREATED', 'PASSWORD SET'],
    row: u => [u.username, u.role, u.company ?? '-', u.state, u.createdAt, u.passwordChangedAt],
  })
})

function stateCommand (name: 'disable' | 'enable'): Command {
  const disabled = name === 'disable'
  const spec: CommandSpec = {
    usage: `epx user ${name} USERNAME`,
    summary: disabled ? 'disable an account (its sessions end at once)' : 'enable a disabled account again',
    about: disabled
      ? 'Disables a console account: it can no longer log in, and its open sessions end at once.'
      : 'Enables a disabled console account again (with its current password).',
    positionals: ['USERNAME'],
  }
  return defineCommand(spec, async (args, io) => {
    const record = await withStore(io.dataDir, store => setUserDisabled(store, args.positionals[0]!, disabled))
    io.out(`${describe(record)} is now ${disabled ? 'disabled' : 'enabled'}`)
  })
}

const resetSpec: CommandSpec = {
  usage: 'epx user reset-password USERNAME',
  summary: 'give an account a new generated password (printed once)',
  about: 'Replaces the password of a console account with a generated one, printed once on the last line; its open sessions end, and the user must choose its own at its next login.',
  positionals: ['USERNAME'],
}

const reset = defineCommand(resetSpec, async (args, io) => {
  const { record, password } = await withStore(io.dataDir, store => resetPassword(store, args.positionals[0]!, Date.now()))
  io.out(`new password for ${describe(record)}${record.disabled ? ' (still disabled: epx user enable)' : ''}; shown this once:`)
  io.out(password)
})

export const userSubcommands: readonly Command[] = [add, list, stateCommand('disable'), stateCommand('enable'), reset]
