/**
 * A programme's bytes → a JSON value (DECISIONS.md "Inbound"): `__proto__` and
 * `constructor.prototype` never reach an object, and malformed JSON says where it broke.
 * Node 20's `JSON.parse` messages often omit the position ("Unexpected token '}', ... is
 * not valid JSON"): a small RFC 8259 scanner, run only on the failure path, finds it.
 * @module
 */
import sjson from 'secure-json-parse'
import { EpxError } from '../errors.ts'

/**
 * Parses a JSON body. Throws a 400 INVALID_PROGRAMME_SOUTIRAGE_REQUEST whose details
 * `{"": why}` say where the text broke, or that a prototype key was refused.
 */
export function parseJson (bytes: Uint8Array): unknown {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
  try {
    // 'error', not 'remove': a body built to poison prototypes is refused, not cleaned.
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (err) {
    const why = /forbidden prototype property/.test((err as Error).message)
      ? 'the keys "__proto__" and "constructor.prototype" are not allowed in the body'
      : describeJsonError(text)
    throw new EpxError('INVALID_PROGRAMME_SOUTIRAGE_REQUEST', ['the body is not a JSON document we accept'], { details: { '': why } })
  }
}

/** What the scanner expects next. */
const Mode = { Value: 0, ValueOrEnd: 1, KeyOrEnd: 2, Key: 3, Colon: 4, After: 5 } as const

/** `not valid JSON at line L, column C (character P): what was found; what was expected`. */
export function describeJsonError (text: string): string {
  if (text.trim() === '') return 'the body is empty; send a Programme_Soutirage JSON object'
  const fault = findJsonError(text)
  if (!fault) return 'the body is not valid JSON'
  const before = text.slice(0, fault.at)
  const line = before.split('\n').length
  const column = fault.at - before.lastIndexOf('\n')
  return `not valid JSON at line ${line}, column ${column} (character ${fault.at}): ${fault.why}`
}

/** The first offending character of `text` and why, or undefined if it is valid JSON. */
function findJsonError (text: string): { at: number; why: string } | undefined {
  const n = text.length
  const stack: number[] = []      // 1 object, 2 array
  let mode: number = Mode.Value
  let i = text.charCodeAt(0) === 0xFEFF ? 1 : 0
  for (;;) {
    while (i < n && isSpace(text.charCodeAt(i))) i++
    if (i >= n) {
      return mode === Mode.After && stack.length === 0 ? undefined : { at: n, why: 'the text ends too early (unclosed object, array or string?)' }
    }
    const c = text.charCodeAt(i)
    switch (mode) {
      case Mode.ValueOrEnd:
        if (c === 93) { stack.pop(); i++; mode = Mode.After; continue }
      // falls through
      case Mode.Value: {
        if (c === 123) { stack.push(1); i++; mode = Mode.KeyOrEnd; continue }
        if (c === 91) { stack.push(2); i++; mode = Mode.ValueOrEnd; continue }
        const end = c === 34 ? scanString(text, i) : c === 45 || (c >= 48 && c <= 57) ? scanNumber(text, i) : scanLiteral(text, i)
        if (typeof end !== 'number') return end
        i = end
        mode = Mode.After
        continue
      }
      case Mode.KeyOrEnd:
        if (c === 125) { stack.pop(); i++; mode = Mode.After; continue }
      // falls through
      case Mode.Key: {
        if (c !== 34) return { at: i, why: `found ${shown(text, i)}; expected a property name in double quotes` }
        const end = scanString(text, i)
        if (typeof end !== 'number') return end
        i = end
        mode = Mode.Colon
        continue
      }
      case Mode.Colon:
        if (c !== 58) return { at: i, why: `found ${shown(text, i)}; expected ':' after the property name` }
        i++
        mode = Mode.Value
        continue
      case Mode.After: {
        const top = stack[stack.length - 1]
        if (top === undefined) return { at: i, why: `found ${shown(text, i)} after the end of the JSON value` }
        if (c === 44) { i++; mode = top === 1 ? Mode.Key : Mode.Value; continue }
        if ((top === 1 && c === 125) || (top === 2 && c === 93)) { stack.pop(); i++; continue }
        return { at: i, why: `found ${shown(text, i)}; expected ',' or '${top === 1 ? '}' : ']'}'` }
      }
    }
  }
}

type Fault = { at: number; why: string }

function scanString (text: string, start: number): number | Fault {
  for (let k = start + 1; k < text.length; k++) {
    const c = text.charCodeAt(k)
    if (c === 34) return k + 1
    if (c < 0x20) return { at: k, why: 'a control character inside a string; escape it (\\n, \\t, \\u00XX)' }
    if (c === 92) {
      const e = text.charCodeAt(k + 1)
      if (e === 117) {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(k + 2, k + 6))) return { at: k, why: 'a \\u escape needs four hexadecimal digits' }
        k += 5
      } else if ('"\\/bfnrt'.includes(text[k + 1] ?? '')) {
        k++
      } else {
        return { at: k, why: `an invalid escape ${shown(text, k, 2)} in a string` }
      }
    }
  }
  return { at: text.length, why: 'a string is not closed' }
}

function scanNumber (text: string, start: number): number | Fault {
  const m = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(start, start + 400))
  if (!m) return { at: start, why: `found ${shown(text, start)}; expected a number` }
  const end = start + m[0].length
  const next = text.charCodeAt(end)
  // `01`, `1.`, `1e`: the number stops at a digit, dot or exponent it cannot take.
  if ((next >= 48 && next <= 57) || next === 46 || next === 101 || next === 69) {
    return { at: end, why: `a malformed number ${shown(text, start, end - start + 1)}` }
  }
  return end
}

function scanLiteral (text: string, start: number): number | Fault {
  for (const word of ['true', 'false', 'null']) {
    if (text.startsWith(word, start)) return start + word.length
  }
  return { at: start, why: `found ${shown(text, start)}; expected a value (object, array, string, number, true, false or null)` }
}

function isSpace (c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9
}

function shown (text: string, at: number, length = 1): string {
  return JSON.stringify(text.slice(at, at + Math.min(length, 20)))
}
