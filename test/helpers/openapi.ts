/**
 * The published description (openapi/epx.openapi.json) as a test oracle: every response
 * a test receives through `startEpx(...).request` is checked here (status listed for the
 * operation, each documented header present when required and of its schema, media type
 * and body of the response's schema), so a change to the door that the description does
 * not say fails the test that saw it. Run `npm run openapi` when the change is meant.
 *
 *   await conformsToDescription({ method: 'GET', path: '/api/...' }, { status, headers, text })
 *
 * A path the description does not serve is checked against `components.responses.UnknownPath`
 * (404), and a method a path does not list against the path's `x-other-methods` (405, in
 * the format of the path's door): those answers are documented too, so none goes unchecked.
 * @module
 */
import { fileURLToPath } from 'node:url'
import { dereference } from '@readme/openapi-parser'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { readUtcInstant } from '../../src/contract/instants.ts'
import { isCalendarDate } from '../../src/contract/paris-day.ts'

export const DESCRIPTION_PATH = fileURLToPath(new URL('../../openapi/epx.openapi.json', import.meta.url))

interface Response { readonly status: number; readonly headers: Readonly<Record<string, string | undefined>>; readonly text: string }
interface Described {
  readonly headers?: Record<string, { required?: boolean; schema: object }>
  readonly content?: Record<string, { schema: object }>
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Described> }> & { 'x-other-methods'?: Described }>
  components: { responses: Record<string, Described> }
}

let loaded: Promise<Document> | undefined
const ajv = new Ajv2020({ strict: false, allErrors: true })
ajv.addFormat('date-time', { type: 'string', validate: s => typeof readUtcInstant(s) !== 'string' })
ajv.addFormat('date', { type: 'string', validate: isCalendarDate })
ajv.addFormat('uri', { type: 'string', validate: s => URL.canParse(s) })
const compiled = new WeakMap<object, ValidateFunction>()

/** The description with every $ref (the schema files included) replaced by its target. */
export function description (): Promise<Document> {
  loaded ??= dereference(DESCRIPTION_PATH) as unknown as Promise<Document>
  return loaded
}

/** Resolves when the response conforms to the description; rejects saying where it does not. */
export async function conformsToDescription (req: { method: string; path: string }, res: Response): Promise<void> {
  const doc = await description()
  const problems = check(doc, req, res)
  if (problems.length) {
    throw new Error(`${req.method} ${req.path} answered ${res.status}, which openapi/epx.openapi.json does not describe:\n- ` +
      problems.join('\n- ') + '\n(a change to the API? run `npm run openapi` and commit the description)')
  }
}

function check (doc: Document, req: { method: string; path: string }, res: Response): string[] {
  const item = doc.paths[req.path]
  const op = item?.[req.method.toLowerCase()]
  let described: Described | undefined
  if (!item) described = res.status === 404 ? doc.components.responses.UnknownPath : undefined
  else if (!op || req.method.toLowerCase().startsWith('x-')) described = res.status === 405 ? item['x-other-methods'] : undefined
  else described = op.responses[String(res.status)]
  if (!described) return [`status ${res.status} is not listed for ${item ? (op ? 'this operation' : 'a method the path does not serve') : 'an unknown path'}`]

  const problems: string[] = []
  for (const [name, h] of Object.entries(described.headers ?? {})) {
    const value = res.headers[name.toLowerCase()]
    if (value === undefined) {
      if (h.required) problems.push(`header ${name} is missing`)
      continue
    }
    const v = validator(h.schema)
    if (!v(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${ajv.errorsText(v.errors)}`)
  }
  const head = req.method === 'HEAD'
  if (!described.content) {
    if (res.text !== '') problems.push('a body where the description has none')
    return problems
  }
  const type = (res.headers['content-type'] ?? '').split(';')[0]!.trim()
  const media = described.content[type]
  if (!media) return [...problems, `Content-Type ${JSON.stringify(type)}; described: ${Object.keys(described.content).join(', ')}`]
  if (head) return problems
  let body: unknown
  try {
    body = JSON.parse(res.text)
  } catch {
    return [...problems, 'the body is not JSON']
  }
  const v = validator(media.schema)
  if (!v(body)) problems.push(...(v.errors ?? []).map(e => `body${e.instancePath}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`))
  return problems
}

/** ajv per schema object; `$id`/`$schema` of the inlined schema files dropped (they repeat). */
function validator (schema: object): ValidateFunction {
  let v = compiled.get(schema)
  if (!v) {
    v = ajv.compile(withoutIds(schema) as object)
    compiled.set(schema, v)
  }
  return v
}

function withoutIds (s: unknown): unknown {
  if (Array.isArray(s)) return s.map(withoutIds)
  if (s === null || typeof s !== 'object') return s
  return Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$id' && k !== '$schema').map(([k, v]) => [k, withoutIds(v)]))
}
