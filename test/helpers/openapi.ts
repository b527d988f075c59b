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
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { DecoratorHandler, type Dispatcher } from 'undici'
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js'
import { PUBLISHED_FORMATS } from '../../src/contract/published-schemas.ts'

export const DESCRIPTION_PATH = fileURLToPath(new URL('../../openapi/epx.openapi.json', import.meta.url))

interface Response { readonly status: number; readonly headers: Readonly<Record<string, string | undefined>>; readonly text: string }
/** A schema of the description: its validator's name in the oracle's module (see `oracle`). */
type Schema = string
interface Described {
  readonly headers?: Record<string, { required?: boolean; schema: Schema }>
  readonly content?: Record<string, { schema: Schema }>
}
interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Described> }>>
  components: { responses: Record<string, Described> }
}
interface Oracle { readonly doc: Document; readonly validators: Readonly<Record<string, ValidateFunction>> }

const FORMATS = Object.fromEntries(Object.entries({ ...PUBLISHED_FORMATS, uri: (s: string) => URL.canParse(s) })
  .map(([name, validate]) => [name, { type: 'string', validate } as const]))
const require = createRequire(import.meta.url)
/** ajv's own `errorsText`, without an ajv instance: a process that reads the oracle from disk loads none of ajv but its runtime helpers. */
const errorsText = (errors: ErrorObject[] | null | undefined) => (errors ?? []).map(e => `data${e.instancePath} ${e.message}`).join(', ')

/**
 * The oracle is kept on disk, in the temp folder's `epx-openapi-oracle-<uid>`, under the hash
 * of the description, its schema files, ajv's version and this module's text: the description
 * dereferenced, each schema in it replaced by a name, and ajv's standalone code of every
 * schema under its name. Each test process that starts epx used to dereference and compile
 * them again (~0.25 s of CPU each, about 65 processes in `npm test`); the first process after
 * a change makes it, the others read it.
 */
let loaded: Promise<Oracle> | undefined
function oracle (): Promise<Oracle> {
  loaded ??= (async () => {
    const root = fileURLToPath(new URL('../../openapi/', import.meta.url))
    const hash = createHash('sha256')
    for (const file of [DESCRIPTION_PATH, ...readdirSync(join(root, 'schemas')).sort().map(f => join(root, 'schemas', f))]) hash.update(file).update('\0').update(readFileSync(file)).update('\0')
    hash.update(readFileSync(fileURLToPath(import.meta.url))).update(JSON.parse(readFileSync(require.resolve('ajv/package.json'), 'utf8')).version)
    const dir = join(tmpdir(), `epx-openapi-oracle-${process.getuid?.() ?? 0}`)
    const base = join(dir, hash.digest('hex'))
    let doc: Document
    try {
      doc = JSON.parse(readFileSync(`${base}.json`, 'utf8')) as Document
    } catch {
      doc = await makeOracle(dir, base)
    }
    const make = (await import(pathToFileURL(`${base}.mjs`).href) as { default: (formats: object, req: NodeJS.Require) => Record<string, ValidateFunction> }).default
    return { doc, validators: make(FORMATS, require) }
  })()
  return loaded
}

/** Dereferences the description, names its schemas and writes both files (module first: a reader finds the JSON only once the module is there). */
async function makeOracle (dir: string, base: string): Promise<Document> {
  const doc = await description() as Document
  const names = new Map<string, string>()
  const { Ajv2020, Name } = await import('ajv/dist/2020.js')
  const compiler = new Ajv2020({ strict: false, allErrors: true, code: { source: true, formats: new Name('formats') } })
  for (const [name, format] of Object.entries(FORMATS)) compiler.addFormat(name, format)
  const nameOf = (schema: unknown): string => {
    // The dereferenced description shares objects between places: one seen already is named.
    if (typeof schema === 'string') return schema
    const text = JSON.stringify(withoutIds(schema))
    let name = names.get(text)
    if (!name) {
      name = `s${names.size}`
      names.set(text, name)
      compiler.addSchema(JSON.parse(text) as object, name)
    }
    return name
  }
  const described = (d: { headers?: Record<string, { schema: unknown }>; content?: Record<string, { schema: unknown }> }): void => {
    for (const h of Object.values(d.headers ?? {})) h.schema = nameOf(h.schema)
    for (const m of Object.values(d.content ?? {})) m.schema = nameOf(m.schema)
  }
  for (const item of Object.values(doc.paths)) for (const op of Object.values(item)) for (const r of Object.values(op.responses ?? {})) described(r as never)
  for (const r of Object.values(doc.components.responses)) described(r as never)
  const standaloneCode = (await import('ajv/dist/standalone/index.js')).default as unknown as (ajv: Ajv2020, refs: Record<string, string>) => string
  const code = standaloneCode(compiler, Object.fromEntries([...names.values()].map(n => [n, n])))
  mkdirSync(dir, { recursive: true })
  // Oracles of earlier descriptions, a day old (a run still using one has read it by then).
  for (const name of readdirSync(dir)) {
    try {
      if (Date.now() - statSync(join(dir, name)).mtimeMs > 86_400_000) rmSync(join(dir, name), { force: true })
    } catch { /* removed by another process meanwhile */ }
  }
  const write = (file: string, text: string) => {
    const draft = `${file}.${process.pid}`
    writeFileSync(draft, text)
    renameSync(draft, file)
  }
  write(`${base}.mjs`, `export default function (formats, require) {\nconst exports = {}, module = { exports };\n${code}\nreturn module.exports\n}\n`)
  write(`${base}.json`, JSON.stringify(doc))
  return doc
}

/** The description with every $ref (the schema files included) replaced by its target. */
export async function description (): Promise<unknown> {
  const { dereference } = await import('@readme/openapi-parser')
  return dereference(DESCRIPTION_PATH)
}

/** Resolves when the response conforms to the description; rejects saying where it does not. */
export async function conformsToDescription (req: { method: string; path: string }, res: Response): Promise<void> {
  const o = await oracle()
  const problems = check(o, req, res)
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

function check ({ doc, validators }: Oracle, req: { method: string; path: string }, res: Response): string[] {
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
    const v = validators[h.schema]!
    if (!v(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${errorsText(v.errors)}`)
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
  const v = validators[media.schema]!
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

/** `$id`/`$schema` of the inlined schema files dropped (they repeat). */
function withoutIds (s: unknown): unknown {
  if (Array.isArray(s)) return s.map(withoutIds)
  if (s === null || typeof s !== 'object') return s
  return Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$id' && k !== '$schema').map(([k, v]) => [k, withoutIds(v)]))
}
