/**
 * The console's template layer: a tagged template that escapes every interpolation
 * unless it is already `SafeHtml`. Pages are built only from `html` and `raw`, so a
 * `site_name` of `<script>` is text by construction, not by each page remembering.
 * A template's own text writes a character above U+00FF as an HTML reference (`&larr;`,
 * `&mdash;`, `&#x25B2;`): the bundler keeps a tagged template's text as written, and one
 * such character makes V8 hold each thread's whole bundle at two bytes a character
 * (test/build.test.ts).
 * @module
 */
import { escape } from 'html-escaper'

/** HTML known to be safe: built by `html` (its parts escaped) or marked by `raw`. */
export class SafeHtml {
  readonly #text: string
  constructor (text: string) { this.#text = text }
  toString (): string { return this.#text }
}

/** A value a template may interpolate: nothing, a scalar (escaped), SafeHtml, or a list of them. */
export type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[]

function render (value: Interpolation): string {
  if (value === null || value === undefined || value === false) return ''
  if (value instanceof SafeHtml) return value.toString()
  if (Array.isArray(value)) return value.map(render).join('')
  return escape(String(value))
}

export function html (strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!
  return new SafeHtml(out)
}

/** Marks text as HTML without escaping. Only for markup the code itself produced (e.g. an SVG built with `html`). */
export function raw (text: string): SafeHtml { return new SafeHtml(text) }
