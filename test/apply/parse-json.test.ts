import t from 'tap'
import { parseJson } from '../../src/apply/parse-json.ts'

// DECISIONS.md "Inbound": a programme's bytes are JSON, parsed without letting a
// prototype key reach an object; a refusal says where the text broke.

const refusal = (text: string) => {
  try {
    parseJson(Buffer.from(text))
  } catch (err: any) {
    return err
  }
  return undefined
}

t.test('valid JSON is parsed, from a view into a larger buffer too', async t => {
  const pool = Buffer.from('xx{"a":[1,2]}yy')
  t.same(parseJson(pool.subarray(2, 13)), { a: [1, 2] })
})

t.test('malformed JSON is a 400 whose detail "" says line, column and what was expected', async t => {
  const err = refusal('{\n  "a": 1,\n  "b" 2\n}')
  t.equal(err?.code, 'INVALID_PROGRAMME_SOUTIRAGE_REQUEST')
  t.equal(err?.status, 400)
  t.match(err?.details?.[''], /^not valid JSON at line 3, column 7 /)
})

t.test('an empty body says so', async t => {
  t.match(refusal('  ')?.details?.[''], /the body is empty/)
})

t.test('__proto__ and constructor.prototype are refused, not cleaned', async t => {
  t.match(refusal('{"__proto__": {"x": 1}}')?.details?.[''], /"__proto__" and "constructor.prototype" are not allowed/)
  t.match(refusal('{"constructor": {"prototype": {"x": 1}}}')?.details?.[''], /not allowed/)
  t.equal(({} as any).x, undefined, 'nothing polluted')
})
