import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { validate, compileErrors } from '@readme/openapi-parser'
import { buildOpenapiFiles, OPENAPI_DIR } from './openapi/build.ts'
import { conformance, conformsToDescription, DESCRIPTION_PATH, description } from './helpers/openapi.ts'
import { OUTBOUND_PATH, INBOUND_PATH } from '../src/http/route.ts'

t.test('the committed openapi/ files are what `npm run openapi` builds from the contract and a real run', async t => {
  const built = await buildOpenapiFiles()
  t.same(Object.keys(built).sort(), ['epx.openapi.json', 'schemas/besoins-agreges.json', 'schemas/programme-soutirage.json'])
  for (const [path, text] of Object.entries(built)) {
    const committed = readFileSync(fileURLToPath(new URL(path, OPENAPI_DIR)), 'utf8')
    t.equal(committed, text, `openapi/${path} is up to date (run npm run openapi)`)
  }
})

t.test('the description is valid OpenAPI 3.1, its schema files resolved', async t => {
  const result = await validate(DESCRIPTION_PATH)
  t.ok(result.valid, result.valid ? 'valid' : compileErrors(result))
  const doc = JSON.parse(readFileSync(DESCRIPTION_PATH, 'utf8'))
  t.equal(doc.openapi, '3.1.0')
  t.same(doc.paths[OUTBOUND_PATH].get.security, [{ mutualTLS: [], bearer: ['outbound:besoins-agreges'] }])
  t.same(doc.paths[INBOUND_PATH].post.security, [{ mutualTLS: [], bearer: ['inbound:programme-soutirage'] }])
  t.equal(doc.paths[OUTBOUND_PATH].get.responses['200'].content['application/json'].schema.$ref, 'schemas/besoins-agreges.json')
  t.equal(doc.paths[INBOUND_PATH].post.requestBody.content['application/json'].schema.$ref, 'schemas/programme-soutirage.json')
  // Every status of the contract and DECISIONS.md, per operation.
  t.same(Object.keys(doc.paths[OUTBOUND_PATH].get.responses), ['200', '304', '400', '401', '403', '404', '405', '429', '500', '503'])
  t.same(Object.keys(doc.paths[INBOUND_PATH].post.responses), ['202', '400', '401', '403', '404', '405', '413', '415', '429', '500', '503'])
  t.same(doc.paths[INBOUND_PATH].post.responses['404'], { $ref: '#/components/responses/UnknownPath' }, 'a wrong path is a real response of the operation')
  t.same(doc.paths[OUTBOUND_PATH].get.responses['405'], { $ref: '#/components/responses/MethodNotAllowedOutbound' })
  t.equal(doc.info.version, '0.5', 'the API\'s version, as its paths name it')
  t.ok(doc.info.license?.name, 'a licence')
  t.notOk(JSON.stringify(doc.paths).includes('"Content-Type"'), 'no Content-Type header parameter (OpenAPI ignores it)')
  t.same(Object.keys(doc.paths[INBOUND_PATH].post.requestBody.content['application/json'].examples), ['oneSite', 'todayTooLate'])
  // DECISIONS.md "Inbound": the entry status late, and the sanity bound's 400, each with a recorded answer.
  const receipt = doc.paths[INBOUND_PATH].post.responses['202'].content['application/json']
  t.same(receipt.examples.late.value.instructions.map((i: any) => i.status), ['late'])
  t.same(doc.components.schemas.Receipt.properties.instructions.items.properties.status.enum, ['queued', 'superseded', 'late'])
  const refused = doc.paths[INBOUND_PATH].post.responses['400'].content['application/json']
  t.match(refused.examples.aboveSanityBound.value.error.details, { '/sites/0/energie_programmee/3/energie_kwh': /sanity bound of 100000 kW per site \(inbound\.maxSiteKw\)/ })
  t.same(doc.components.schemas.Receipt.properties.status, { type: 'string', const: 'received' })
  const names = (r: any) => Object.keys(r.headers ?? {})
  t.same(names(doc.paths[OUTBOUND_PATH].get.responses['304']).slice(0, 3), ['ETag', 'Last-Modified', 'Cache-Control'])
  t.ok(names(doc.paths[OUTBOUND_PATH].get.responses['404']).includes('Retry-After'))
  t.ok(names(doc.paths[INBOUND_PATH].post.responses['503']).includes('Retry-After'))
  t.ok(doc.paths[INBOUND_PATH].post.responses['401'].headers['WWW-Authenticate'].required)
  t.same(doc.paths[OUTBOUND_PATH].get.parameters.map((p: any) => p.name), ['site_id', 'target_date', 'If-None-Match', 'If-Modified-Since'])
})

t.test('Redocly lints the description without a warning (its recommended rules)', async t => {
  const { execFile } = await import('node:child_process')
  const cli = fileURLToPath(new URL('../node_modules/@redocly/cli/bin/cli.js', import.meta.url))
  const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, [cli, 'lint', DESCRIPTION_PATH, '--format=json'],
    { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }, maxBuffer: 1 << 24 },
    (err, stdout) => (stdout ? resolve(stdout) : reject(err ?? new Error('no output')))))
  const report = JSON.parse(out) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }> }
  t.same(report.problems.map(p => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`), [])
  t.same(report.totals, { errors: 0, warnings: 0, ignored: 0 })
})

t.test('the published examples validate against their schemas, and every instant has one format', async t => {
  const doc = await description() as any
  const ops = Object.values(doc.paths).flatMap((item: any) => Object.values(item)) as any[]
  const { Ajv2020 } = await import('ajv/dist/2020.js')
  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  const body = ops.find(o => o.requestBody).requestBody.content['application/json']
  for (const [name, ex] of Object.entries(body.examples) as Array<[string, any]>) t.ok(ajv.validate(body.schema, ex.value), `request example ${name} is a valid programme`)
  const slot = body.schema.properties.sites.items.properties.energie_programmee.items.properties
  const instant = body.schema.properties.emitted_at
  t.same([slot.debut_utc.format, slot.debut_utc.pattern], [instant.format, instant.pattern], 'debut_utc like emitted_at')
  t.same([slot.fin_utc.format, slot.fin_utc.pattern], [instant.format, instant.pattern], 'fin_utc like emitted_at')
  const receipt = ops.find(o => o.operationId === 'postProgrammeSoutirage').responses['202'].content['application/json']
  const id = receipt.schema.properties.instructions.items.properties.instruction_id
  t.match(receipt.examples.received.value.instructions[0].instruction_id, new RegExp(id.pattern))
  t.notMatch('ProgrammeSoutirage-2026-11-22-rev-2026-11-21T12:00:00Z', new RegExp(id.pattern))
})

t.test('the response check refuses what the description does not say', async t => {
  const get = { method: 'GET', path: OUTBOUND_PATH }
  const problem = (status: number, extra: object = {}) => JSON.stringify({ type: 'https://x.example/errors/not-found', title: 'Not Found', status, detail: 'no', code: 'NOT_PUBLISHED', ...extra })
  const budget = { 'ratelimit-policy': '"get";q=500;w=10', ratelimit: '"get";r=499;t=1' }
  const notPublished = { status: 404, headers: { 'content-type': 'application/problem+json', 'retry-after': '300', 'x-content-type-options': 'nosniff', ...budget }, text: problem(404) }
  await t.resolves(conformsToDescription(get, notPublished), 'the real 404 shape passes')
  await t.rejects(conformsToDescription(get, { ...notPublished, headers: { ...notPublished.headers, ratelimit: 'r=1' } }), /RateLimit/, 'RateLimit in the draft\'s structured-field form')
  const rateLimited = { status: 429, headers: { ...notPublished.headers, 'retry-after': '7', ratelimit: '"get";r=0;t=10' }, text: problem(429, { type: 'https://x.example/errors/rate-limited', title: 'Too Many Requests', code: 'RATE_LIMITED' }) }
  await t.resolves(conformsToDescription(get, rateLimited), 'a 429 whose Retry-After is the time until the budget has a request again')
  await t.rejects(conformsToDescription(get, { ...rateLimited, headers: { ...rateLimited.headers, 'retry-after': undefined } }), /Retry-After is missing/)
  await t.rejects(conformsToDescription(get, { ...notPublished, headers: { ...notPublished.headers, 'retry-after': '60' } }), /Retry-After/, 'another Retry-After')
  await t.rejects(conformsToDescription(get, { ...notPublished, status: 418 }), /status 418 is not listed/)
  await t.rejects(conformsToDescription(get, { ...notPublished, headers: { ...notPublished.headers, 'content-type': 'application/json' } }), /Content-Type/)
  await t.rejects(conformsToDescription(get, { ...notPublished, text: problem(404, { status: 'x' }) }), /body\/status/)
  await t.rejects(conformsToDescription({ method: 'GET', path: '/nowhere' }, { ...notPublished, status: 200 }), /unknown path/)
  const unknownPath = { status: 404, headers: { 'content-type': 'application/problem+json', 'x-content-type-options': 'nosniff' }, text: problem(404, { type: 'https://x.example/errors/unknown-path', code: 'UNKNOWN_PATH' }) }
  await t.resolves(conformsToDescription({ method: 'GET', path: '/nowhere' }, unknownPath), 'an unknown path is a documented 404')
  await t.rejects(conformsToDescription({ method: 'GET', path: '/nowhere' }, { ...unknownPath, text: problem(404) }), /body\/code/, 'with its own code, not NOT_PUBLISHED')
  const { code: _, ...noCode } = JSON.parse(problem(404))
  await t.rejects(conformsToDescription(get, { ...notPublished, text: JSON.stringify(noCode) }), /required property 'code'/, 'every problem carries its code')
  await t.rejects(conformsToDescription({ method: 'POST', path: INBOUND_PATH }, { status: 202, headers: { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' }, text: '{"status":"received"}' }), /required property/)
  await t.rejects(conformsToDescription(get, { status: 304, headers: { etag: 'W/"a"', 'cache-control': 'private, max-age=60, must-revalidate', 'x-content-type-options': 'nosniff' }, text: '' }), /Last-Modified is missing/)
})

t.test('through the conformance interceptor, an answer the description does not describe fails the request', async t => {
  const { createServer } = await import('node:http')
  const { Agent, request } = await import('undici')
  const server = createServer((req, res) => {
    // A 404 without its Retry-After, as a door that lost the header would send it.
    res.writeHead(404, { 'content-type': 'application/problem+json', 'x-content-type-options': 'nosniff' })
    const code = req.url?.startsWith('/elsewhere') ? 'UNKNOWN_PATH' : 'NOT_PUBLISHED'
    res.end(JSON.stringify({ type: 'http://127.0.0.1/errors/not-found', title: 'Not Found', status: 404, detail: 'no', code }))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const agent = new Agent().compose(conformance)
  t.teardown(() => agent.close())
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  const res = await request(`${base}${OUTBOUND_PATH}?site_id=x`, { dispatcher: agent })
  await t.rejects(res.body.text(), /header Retry-After is missing/)
  const unknown = await request(`${base}/elsewhere`, { dispatcher: agent })
  t.match(JSON.parse(await unknown.body.text()), { status: 404 }, 'the same answer on an unknown path is the documented UnknownPath')
})

t.test('the POST states every refusal of DECISIONS.md "Inbound"; Problem requires its code; the receipt promises nothing it will not do', async t => {
  const doc = await description() as any
  const post = doc.paths['/api/v0.5/energy-programs/programme-soutirage'].post
  for (const rule of [
    /not JSON, or not an object/, /schema_version.*v0\.2/, /slot_duration_secs.*multiple of 900/, /more sites than/, /perimeter/,
    /solver does not manage/, /900 s boundary/, /outside the Europe\/Paris\s+target day/, /overlapping/, /inbound\.requireContiguous/, /negative/,
    /inbound\.maxSiteKw/, /inbound\.maxClockSkewSeconds.*ahead of the service's clock/, /the day is over/, /inbound\.maxDaysAhead/, /Today is accepted/,
    /415/, /413/,
  ]) t.match(post.description, rule, `the description states ${rule}`)
  t.ok(doc.components.schemas.Problem.required.includes('code'), 'Problem.code required where the schema is defined, not only per response')
  const receipt = doc.components.schemas.Receipt
  t.notMatch(receipt.description, /will be applied/, 'no "will be applied" for an entry that will not be')
  t.match(receipt.description, /`queued` goes to the solver at its next cycle/)
})

t.test('webhooks: the check at registration, and a POST per event type with the Standard Webhooks headers and the feed\'s event schema; the example delivery verifies', async t => {
  const doc = JSON.parse(readFileSync(DESCRIPTION_PATH, 'utf8'))
  t.same(Object.keys(doc.webhooks), ['registrationCheck', 'besoins_agreges.publie', 'instruction.statut', 'realise.modifie', 'perimetre.modifie'])
  t.same(doc.webhooks.registrationCheck.get.parameters.map((p: any) => [p.name, p.in, p.required]), [['echo', 'query', true]])
  const feedItems = doc.components.schemas.Evenements.properties.evenements.items.oneOf.map((r: any) => r.$ref)
  for (const [type, { post }] of Object.entries(doc.webhooks).slice(1) as Array<[string, any]>) {
    t.same(post.parameters.map((p: any) => [p.name, p.in, p.required]), [['webhook-id', 'header', true], ['webhook-timestamp', 'header', true], ['webhook-signature', 'header', true]], type)
    const ref = post.requestBody.content['application/json'].schema.$ref
    t.ok(feedItems.includes(ref), `${type}: the body is the feed's event schema`)
    t.equal(doc.components.schemas[ref.split('/').at(-1)].properties.type.const, type)
    t.same(Object.keys(post.responses).sort(), ['2XX', '401', 'default'])
  }
  const { verifyWebhook } = await import('../src/contract/webhook-signature.ts')
  const post = doc.webhooks['besoins_agreges.publie'].post
  const headers = Object.fromEntries(post.parameters.map((p: any) => [p.name, p.example]))
  const secret = /signed under `(whsec_[^`]+)`/.exec(post.parameters[2].description)![1]!
  const body = post.requestBody.content['application/json'].examples.recorded.value
  t.match(verifyWebhook({ secret, headers, body: JSON.stringify(body), nowSeconds: Number(headers['webhook-timestamp']) }), { ok: true, id: body.id }, 'the example is signed under the secret it names')
  const { Ajv2020 } = await import('ajv/dist/2020.js')
  t.ok(new Ajv2020({ strict: false, validateFormats: false }).validate(doc.components.schemas.BesoinsAgregesPublie, body), 'and is an event of its type')
})
