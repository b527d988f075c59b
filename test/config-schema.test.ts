// src/config-schema.ts is the one source of the configuration schema: the file the manifest
// names and the configuration tables of docs/configuration.md must say the same.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { configSchema, configSchemaJson, schemaJsonText } from '../src/config-schema.ts'
import { initialSettings } from '../src/cli/settings.ts'

const root = resolve(import.meta.dirname, '..')

t.test('config.schema.json, as committed, is the rendering of src/config-schema.ts', async t => {
  const committed = readFileSync(join(root, 'config.schema.json'), 'utf8')
  t.ok(committed === configSchemaJson(),
    'config.schema.json differs from src/config-schema.ts: edit the .ts, then `npm run build` rewrites the .json')
  t.same(JSON.parse(committed), configSchema, 'and it parses to the same schema')
})

t.test('the rendering is JSON that keeps each leaf key on one line', async t => {
  const text = configSchemaJson()
  t.match(text, /^ {8}"port": \{ "type": "integer", "minimum": 0, "maximum": 65535, "default": 8443, "description": "0 picks a free port\." \},$/m)
  t.match(text, /^ {6}"default": \{\},$/m, 'an empty object stays {}')
  t.ok(text.endsWith('}\n'))
  // Keys a later schema may use: enum and required lists, nested arrays.
  const schema = { required: ['a', 'b'], properties: { a: { enum: ['x', null, 1] }, b: { type: 'array', items: [{ type: 'string' }], default: [] } } }
  t.equal(schemaJsonText(schema), [
    '{',
    '  "required": [ "a", "b" ],',
    '  "properties": {',
    '    "a": { "enum": [ "x", null, 1 ] },',
    '    "b": {',
    '      "type": "array",',
    '      "items": [',
    '        { "type": "string" }',
    '      ],',
    '      "default": []',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n'))
  t.same(JSON.parse(schemaJsonText(schema)), schema)
})

interface Leaf { readonly default?: unknown }
/** Every configurable key of the schema, dotted (`api.tls.certFile`), with its schema. */
function leaves (schema: { properties?: Record<string, unknown> }, prefix = ''): Map<string, Leaf> {
  const out = new Map<string, Leaf>()
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    const s = sub as { properties?: Record<string, unknown> } & Leaf
    if (s.properties) for (const [k, v] of leaves(s, `${prefix}${name}.`)) out.set(k, v)
    else out.set(`${prefix}${name}`, s)
  }
  return out
}

/** The configuration tables of docs/configuration.md: key → default cell. */
function documentedRows (): Map<string, string> {
  const section = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8')
  return new Map([...section.matchAll(/^\| `([\w.]+)` \| ([^|]*) \|/gm)].map(m => [m[1]!, m[2]!.trim()]))
}

t.test("docs/configuration.md's plugin table lists exactly the schema's keys, each with the schema's default", async t => {
  const schemaKeys = leaves(configSchema)
  const rows = documentedRows()
  const pluginRows = [...rows.keys()].filter(k => !k.startsWith('host.'))
  t.same(pluginRows, [...schemaKeys.keys()], 'the same keys, in the same order')
  for (const [key, leaf] of schemaKeys) {
    if (leaf.default === undefined) continue
    t.equal(rows.get(key), `\`${String(leaf.default)}\``, `${key}: documented default`)
  }
})

t.test("docs/configuration.md's host table lists the reference host's settings and defaults", async t => {
  const { host } = initialSettings()
  const hostRows = [...documentedRows()].filter(([k]) => k.startsWith('host.'))
  t.same(hostRows, Object.entries(host).map(([k, v]) => [`host.${k}`, String(v)]))
})
