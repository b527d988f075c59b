/**
 * A day's programme against delivery as CSV (docs/http-api.md "Programme against delivery"),
 * one row per site and quarter-hour. Two dialects of the same rows:
 * - `rfc4180` (RFC 4180: `,`, CRLF, numbers with a dot): what scripts and `epx realise --csv` read;
 * - `tableur-fr`: `;` between cells, `,` in numbers and a UTF-8 BOM, which a spreadsheet set
 *   to French opens as numbers and accented text without an import dialog.
 * `annotated` adds, after the columns scripts know (never before them, so their positions
 * hold), the quarter-hour's start in Paris time with its offset (DECISIONS.md "Time": the
 * autumn day repeats 02:00-03:00, the offset tells the two apart) and the verdicts in French.
 * @module
 */
import { DateTime } from 'luxon'
import { PARIS } from '../contract/paris-day.ts'
import type { RealiseBody, Verdict } from '../contract/realise.ts'

export const CSV_HEADER = ['site_id', 'target_date', 'instruction_id', 'debut_utc', 'fin_utc', 'energie_programmee_kwh', 'energie_realisee_kwh', 'verdict', 'manque_kwh',
  'company_id', 'tardif_instruction_id', 'tardif_energie_kwh'] as const

/** The columns `annotated` adds at the end. */
export const CSV_ANNOTATIONS = ['debut_paris', 'decalage_paris', 'verdict_libelle', 'tardif_libelle'] as const

/** A verdict in French, as the console writes it. */
export const VERDICT_LABELS: Readonly<Record<Verdict, string>> = {
  met: 'atteint',
  short: 'insuffisant',
  curtailment_respected: 'effacement respecté',
  curtailment_broken: 'effacement non respecté',
  no_data: 'pas de relevé',
  unconstrained: 'sans contrainte',
}

/** `late` in French (DECISIONS.md "In force, quarter-hour by quarter-hour"): neither met nor short. */
export const LATE_LABEL = 'reçu trop tard'

export type CsvDialect = 'rfc4180' | 'tableur-fr'

export interface CsvOptions {
  readonly dialect?: CsvDialect
  /** Adds `CSV_ANNOTATIONS` after the usual columns. */
  readonly annotated?: boolean
}

/**
 * A day as CSV, a header row first: numbers with no thousands separator, an empty cell where
 * there is no value, so a spreadsheet's sums equal the totals. `instruction_id` is the one in
 * force at the quarter-hour's start; a late slot has its own columns, so it is never summed
 * with them. Without options, the bytes `epx realise --csv` has always written.
 */
export function realisationCsv (bodies: readonly RealiseBody[], options: CsvOptions = {}): string {
  const french = options.dialect === 'tableur-fr'
  const sep = french ? ';' : ','
  const cell = (v: string | number | null | undefined): string => {
    if (v === null || v === undefined) return ''
    if (typeof v === 'number') return french ? String(v).replace('.', ',') : String(v)
    return /[",;\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v
  }
  const lines = [[...CSV_HEADER, ...(options.annotated ? CSV_ANNOTATIONS : [])].join(sep)]
  for (const b of bodies) {
    for (const c of b.creneaux) {
      const governing = c.instruction_id === undefined ? b.instruction_id : c.instruction_id
      const row = [b.site_id, b.target_date, governing, c.debut_utc, c.fin_utc, c.energie_programmee_kwh, c.energie_realisee_kwh, c.verdict, c.manque_kwh,
        c.company_id, c.tardif?.instruction_id, c.tardif?.energie_programmee_kwh]
      if (options.annotated) {
        const paris = DateTime.fromISO(c.debut_utc, { zone: PARIS })
        row.push(paris.toFormat('yyyy-MM-dd HH:mm'), paris.toFormat('ZZ'), VERDICT_LABELS[c.verdict], c.tardif ? LATE_LABEL : undefined)
      }
      lines.push(row.map(cell).join(sep))
    }
  }
  return (french ? '\uFEFF' : '') + lines.join('\r\n') + '\r\n'
}
