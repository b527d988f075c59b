/**
 * The published description (openapi/epx.openapi.json) as a test oracle: every response
 * a test receives through `startEpx(...).request` is checked here (status listed for the
 * operation, each documented header present when required and of its schema, media type
 * and body of the response's schema), so a change to the door that the description does
 * not say fails the test that saw it. Run `npm run openapi` when the change is meant.
 *
 *   new Agent({ connect }).compose(conformance)   // an undici dispatcher that checks every answer
 *   await conformsToDescription({ method: 'GET', path: '/api/...' }, { status, headers, text })   // one answer
 *
 * Through `conformance` a non-conforming answer fails the request: its body stream errors
 * with the list of problems, so `await res.body.text()` (or `.json()`) rejects.
 *
 * Not checked, on purpose: answers read off raw sockets by tests of the socket itself
 * (slow or half-sent requests, early refusal, lingering, in test/http/{body,early-refusal,
 * hardening,linger,listener}.test.ts and test/auth/authorize.test.ts: they assert bytes,
 * timeouts and closes, and their answers come from the same renderer the checked tests
 * exercise), and test/host/fixtures/activation-cycles.ts, which measures the heap of
 * repeated activations: loading this oracle there would be measured too.
 *
 * A templated path (`/errors/{slug}`) serves every path it matches; an answer that is not
 * JSON (a problem type's HTML page) is checked as a string.
 * A path the description does not serve is checked against `components.responses.UnknownPath`
 * (404), and a method a path does not list against the 405 its operations list (in the
 * format of the path's door): those answers are documented too, so none goes unchecked.
 * @module
 */
import { fileURLToPath } from 'node:url'
import { dereference } from '@readme/openapi-parser'
import { DecoratorHandler, type Dispatcher } from 'undici'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { PUBLISHED_FORMATS } from '../../src/contract/published-schemas.ts'

export const DESCRIPTION_PATH = fileURLToPath(new URL('../../openapi/epx.openapi.json', import.meta.url))

interface Response { readonly status: number; readonly headers: Readonly<Record<string, string | undefined>>; readonly text: string }
interface Described {
  readonly headers?: Record<string, { required?: boolean; schema: object }>
  readonly content?: Record<string, { schema: object }>
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Described> }>>
  components: { responses: Record<string, Described> }
}

let loaded: Promise<Document> | undefined
const ajv = new Ajv2020({ strict: false, allErrors: true })
for (const [name, validate] of Object.entries(PUBLISHED_FORMATS)) ajv.addFormat(name, { type: 'string', validate })
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

/** The description's item of a path: its own, or a templated one's (`/errors/{slug}`). */
function itemOf (doc: Document, path: string): Document['paths'][string] | undefined {
  const own = doc.paths[path]
  if (own) return own
  for (const [template, item] of Object.entries(doc.paths)) {
    if (!template.includes('{')) continue
    const pattern = new RegExp('^' + template.split(/\{[^}]+\}/).map(p => p.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/]+') + '$')
    if (pattern.test(path)) return item
  }
  return undefined
}

function check (doc: Document, req: { method: string; path: string }, res: Response): string[] {
  const item = itemOf(doc, req.path)
  const op = item?.[req.method.toLowerCase()]
  let described: Described | undefined
  if (!item) described = res.status === 404 ? doc.components.responses.UnknownPath : undefined
  // A method the path does not serve: the 405 its operations list (the same for each).
  else if (!op) described = res.status === 405 ? Object.values(item)[0]?.responses['405'] : undefined
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
  let body: unknown = res.text
  // A page (text/html) is its text; a JSON answer is its value.
  if (/json/.test(type)) {
    try {
      body = JSON.parse(res.text)
    } catch {
      return [...problems, 'the body is not JSON']
    }
  }
  const v = validator(media.schema)
  if (!v(body)) problems.push(...(v.errors ?? []).map(e => `body${e.instancePath}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`))
  return problems
}

/** undici interceptor: each answer is checked once complete; see the module comment. */
export const conformance: Dispatcher.DispatcherComposeInterceptor = dispatch => (opts, handler) =>
  dispatch(opts, new ConformingHandler(handler, { method: opts.method, path: opts.path.split('?')[0]! }))

type Headers = Record<string, string | string[] | undefined>
/** DecoratorHandler speaks undici 7's handler API (wrapping older handlers); its types lag. */
interface ResponseHandler {
  onResponseStart(controller: unknown, status: number, headers: Headers, message?: string): void
  onResponseData(controller: unknown, chunk: Buffer): void
  onResponseEnd(controller: unknown, trailers: Headers): void
  onResponseError(controller: unknown, err: Error): void
}
const Decorator = DecoratorHandler as unknown as new (h: Dispatcher.DispatchHandler) => ResponseHandler & Dispatcher.DispatchHandler

class ConformingHandler extends Decorator {
  #status = 0
  #headers: Record<string, string> = {}
  #chunks: Buffer[] = []

  constructor (handler: Dispatcher.DispatchHandler, private readonly req: { method: string; path: string }) {
    super(handler)
  }

  override onResponseStart (controller: unknown, status: number, headers: Headers, message?: string): void {
    this.#status = status
    for (const [k, v] of Object.entries(headers)) if (v !== undefined) this.#headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v
    return super.onResponseStart(controller, status, headers, message)
  }

  override onResponseData (controller: unknown, chunk: Buffer): void {
    this.#chunks.push(chunk)
    return super.onResponseData(controller, chunk)
  }

  override onResponseEnd (controller: unknown, trailers: Headers): void {
    const res = { status: this.#status, headers: this.#headers, text: Buffer.concat(this.#chunks).toString('utf8') }
    conformsToDescription(this.req, res).then(
      () => super.onResponseEnd(controller, trailers),
      (err: Error) => super.onResponseError(controller, err),
    )
  }
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
