/**
 * Checks of option values shared by several `epx` commands: each mistake becomes an
 * EPX_USAGE error (exit 2) that names the option and what it expects.
 * @module
 */
import { isPrm } from '../contract/ids.ts'
import { isCalendarDate } from '../contract/paris-day.ts'
import { usageError, type Args, type CommandSpec } from './define-command.ts'

/** The option's value, or EPX_USAGE naming the missing option. */
export function required (args: Args, spec: CommandSpec, name: string): string {
  const v = args.string(name)
  if (v === undefined || v === '') throw usageError(spec, `missing --${name} ${spec.options?.[name]?.arg ?? 'VALUE'}`)
  return v
}

/** A site id option value, or EPX_USAGE naming the option and the expected shape. */
export function siteId (value: string, spec: CommandSpec, name = 'site'): string {
  if (!isPrm(value)) throw usageError(spec, `--${name} ${value} is not a site id: PRM followed by 14 digits is expected`)
  return value
}

/** Every value of a repeatable site option (each may also be comma-separated), checked. */
export function siteIds (args: Args, spec: CommandSpec, name = 'site'): string[] {
  return args.strings(name).flatMap(s => s.split(',')).map(s => s.trim()).filter(Boolean).map(s => siteId(s, spec, name))
}

/** A calendar-date option value `YYYY-MM-DD`, or EPX_USAGE naming the option. */
export function calendarDate (value: string, spec: CommandSpec, name = 'date'): string {
  if (!isCalendarDate(value)) throw usageError(spec, `--${name} ${value} is not a calendar date YYYY-MM-DD`)
  return value
}
