#!/usr/bin/env node
/**
 * Builds what a solver loads: `dist/index.js` (the plugin, `activate`) and
 * `dist/programme-worker.js` (the thread that parses large programmes), `dist/door-worker.js`
 * and `dist/webhooks-worker.js` (the API door's and the webhook deliverer's threads), plain ESM for
 * Node 20. A daemon then runs epx without a TypeScript loader: tsx's loader thread alone
 * is ~37 MB of resident memory (bench/README.md "How to read the figures", Memory), and its helpers cost CPU on every request.
 * Also `dist/cli.js`, the operator's `epx` (bin/epx.js loads it): through tsx a command
 * took 0.7 to 1.2 s before it printed anything, compiling the sources on every run.
 * Dependencies stay external (lmdb is native, pino starts its own threads from files).
 * Tests and the bench harness keep running the sources through tsx.
 *
 * First it generates the JSON serializers (see SERIALIZERS) and validators (see STANDALONE),
 * which src/ imports.
 *
 * `node scripts/build.mjs [--out DIR] [--entry NAME=file.ts ...] [--write-config-schema]`
 * (entries given replace the plugin's; the bench builds its E server this way;
 * `--write-config-schema`, what `npm run build` adds, rewrites config.schema.json from
 * src/config-schema.ts); about a second.
 */
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const args = process.argv.slice(2)
let outdir = resolve(root, 'dist')
// bsp.js: the reference BSP client, `epx-gateway/bsp` (package.json "exports").
let entryPoints = { index: 'src/index.ts', 'programme-worker': 'src/apply/programme-worker.ts', 'door-worker': 'src/door/worker.ts', 'webhooks-worker': 'src/webhooks/thread/worker.ts', bsp: 'src/bsp/index.ts' }
let withCli = true
let writeConfigSchema = false
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') outdir = resolve(args[++i])
  else if (args[i] === '--write-config-schema') writeConfigSchema = true
  else if (args[i] === '--entry') {
    const [name, file] = args[++i].split('=')
    if (withCli) entryPoints = {}
    withCli = false
    entryPoints[name] = file
  } else {
    console.error(`build: unknown argument ${args[i]}`)
    process.exit(2)
  }
}

/**
 * Validators generated as JavaScript (ajv's standalone code) from a schema a TypeScript
 * module exports, with the ajv options it exports beside it. Compiling at run time cost
 * every `epx` command that reads the configuration ~100 ms (importing ajv ~45, compiling
 * ~55). The output lies in src/generated/ (not committed: every build, and so every
 * `npm install` and tap run, writes it) so that tsx runs of the sources use it too.
 * `json`: the committed JSON file published from that schema, written only when asked
 * (--write-config-schema), so a test can tell when the committed one lags its source.
 * `vocabulary`: an export that adds the schema's keywords and formats to an ajv instance;
 * `formats`: the export the generated module imports its formats' functions from.
 */
const STANDALONE = [
  {
    source: 'src/config-schema.ts', schema: 'configSchema', options: 'configAjvOptions',
    out: 'src/generated/config-validator.js', json: { file: 'config.schema.json', text: 'configSchemaJson' },
  },
  {
    // The programme's validator for the default site limit: each door thread compiled it at its start.
    source: 'src/contract/programme-ajv.ts', schema: 'defaultProgrammeSchema', options: 'programmeAjvOptions',
    vocabulary: 'addProgrammeVocabulary', formats: { name: 'programmeFormats', from: '../contract/programme-soutirage.ts' },
    out: 'src/generated/programme-validator.js',
  },
]

/** A generated module seen from the module it is generated from: not there yet, and not needed. */
const stubGenerated = {
  name: 'stub-generated',
  setup (b) {
    b.onResolve({ filter: /\/generated\/[^/]*-(serializer|validator)\.js$/ }, a => ({ path: a.path, namespace: 'stub-generated' }))
    b.onLoad({ filter: /.*/, namespace: 'stub-generated' }, () => ({ contents: 'export default () => { throw new Error("build-time stub") }', loader: 'js' }))
  },
}

/**
 * Serializers generated as JavaScript (fast-json-stringify's standalone mode) from a schema
 * a TypeScript module exports. fast-json-stringify compiles with ajv and its formats at
 * run time: importing and compiling it cost each thread that serializes ~2 MB of heap and
 * ~3 MB of resident memory (measured in a worker, bench/README.md "How to read the figures", Memory), and the API door's
 * worker, which only writes the 202 receipt, loaded it for that alone. The generated code
 * needs only the package's small runtime (`fast-json-stringify/lib/serializer`).
 * A source module imports its own output: at build time that import is a stub.
 */
const SERIALIZERS = [
  { source: 'src/contract/compiled.ts', schema: 'receiptSchema', out: 'src/generated/receipt-serializer.js', type: "import('../contract/compiled.ts').Receipt" },
  { source: 'src/contract/besoins-agreges.ts', schema: 'besoinsAgregesSchema', out: 'src/generated/besoins-agreges-serializer.js', type: "import('../contract/besoins-agreges.ts').BesoinsAgreges" },
]

try {
  for (const v of SERIALIZERS) {
    const mod = await importTs(v.source)
    writeIfChanged(v.out, await standaloneSerializer(mod[v.schema], v.source))
    writeIfChanged(v.out.replace(/\.js$/, '.d.ts'), [
      serializerBanner(v.source),
      `declare const serialize: (value: ${v.type}) => string`,
      'export default serialize',
      '',
    ].join('\n'))
  }
} catch (err) {
  console.error(`build: cannot generate the serializers: ${err?.stack ?? err}`)
  process.exit(1)
}

try {
  for (const v of STANDALONE) {
    const mod = await importTs(v.source)
    writeIfChanged(v.out, await standaloneValidator(mod, v))
    writeIfChanged(v.out.replace(/\.js$/, '.d.ts'), [
      generatedBanner(v.source),
      "import type { ValidateFunction } from 'ajv'",
      'declare const validate: ValidateFunction',
      'export default validate',
      '',
    ].join('\n'))
    if (writeConfigSchema && v.json) writeIfChanged(v.json.file, mod[v.json.text]())
  }
} catch (err) {
  console.error(`build: cannot generate the schema validators: ${err?.stack ?? err}`)
  process.exit(1)
}

/** A TypeScript module, bundled by esbuild and evaluated (build-time schema modules import no native code). */
async function importTs (file) {
  const out = await build({ absWorkingDir: root, entryPoints: [file], bundle: true, write: false, platform: 'node', format: 'esm', logLevel: 'error', plugins: [stubGenerated] })
  return import('data:text/javascript,' + encodeURIComponent(out.outputFiles[0].text))
}

async function standaloneValidator (mod, v) {
  const { Ajv, Name } = await import('ajv')
  const { default: standaloneCode } = await import('ajv/dist/standalone/index.js')
  const ajv = new Ajv({ ...mod[v.options], code: { source: true, esm: true, ...(v.formats ? { formats: new Name(v.formats.name) } : {}) } })
  if (v.vocabulary) mod[v.vocabulary](ajv)
  // A module is strict already; ajv's directive would follow our import, as a stray string.
  const code = standaloneCode(ajv, ajv.compile(mod[v.schema])).replace(/^"use strict";/, '')
  // ajv's ESM output still calls require() for its runtime helpers (ucs2length for
  // minLength...): give the module one that resolves them from where it lies.
  const requireShim = code.includes('require(')
    ? 'import { createRequire } from "node:module";const require = createRequire(import.meta.url);\n'
    : ''
  const formats = v.formats ? `import { ${v.formats.name} } from ${JSON.stringify(v.formats.from)};\n` : ''
  return `${generatedBanner(v.source)}\n${formats}${requireShim}${code}\n`
}

async function standaloneSerializer (schema, source) {
  const { default: fastJson } = await import('fast-json-stringify')
  // CommonJS (`require`, `module.exports`) in, an ES module out.
  const code = fastJson(schema, { mode: 'standalone' })
  return `${serializerBanner(source)}
import { createRequire } from "node:module";const require = createRequire(import.meta.url);const module = { exports: {} };
${code}
export default module.exports
`
}

function serializerBanner (source) {
  return `// Generated by scripts/build.mjs (fast-json-stringify standalone code) from ${source}; do not edit.`
}

function generatedBanner (source) {
  return `// Generated by scripts/build.mjs (ajv standalone code) from ${source}; do not edit.`
}

function writeIfChanged (file, text) {
  const path = resolve(root, file)
  // Unchanged files keep their mtime: tsx and esbuild caches stay valid.
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, text)
}

const common = {
  absWorkingDir: root,
  outdir,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  metafile: true,
}

// The CLI is split: each command's code (and the packages it imports) is a chunk loaded
// when that command runs, so `epx --help` loads no package and `epx company list` only
// lmdb and ajv. Chunks stay beside cli.js in dist/: a module that reads a file relative
// to itself (config.ts: ../config.schema.json) finds it from any file of dist/.
const CLI_CHUNK = /^cli-chunk-.*\.js(\.map)?$/
const builds = [{ entryPoints }]
if (withCli) builds.push({ entryPoints: { cli: 'src/cli/main.ts' }, splitting: true, chunkNames: 'cli-chunk-[hash]' })

try {
  const results = await Promise.all(builds.map(b => build({ ...common, ...b })))
  if (withCli) {
    // Chunks of earlier builds (their hash names change with their content) go.
    const written = new Set(Object.keys(results[1].metafile.outputs).map(f => basename(f)))
    for (const f of readdirSync(outdir)) if (CLI_CHUNK.test(f) && !written.has(f)) rmSync(join(outdir, f))
  }
} catch {
  // esbuild has printed what failed and where.
  process.exit(1)
}
