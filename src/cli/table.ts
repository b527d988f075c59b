/**
 * Plain-text tables for list commands: left-aligned columns, two spaces apart, a header
 * row in capitals. Easy to read and to `awk`.
 * @module
 */

/** Lines of a table; the first row is the header. */
export function formatTable (rows: ReadonlyArray<readonly string[]>): string[] {
  const widths: number[] = []
  for (const row of rows) row.forEach((cell, i) => { widths[i] = Math.max(widths[i] ?? 0, cell.length) })
  return rows.map(row => row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i]!)).join('  ').trimEnd())
}
