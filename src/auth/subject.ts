/**
 * Certificate subjects (DNs) as text: parsed from `CN=…,O=…` and written one canonical
 * way, so a company's bound subject compares equal to the certificate's whatever the
 * attribute order. Apart from pki.ts so the door never loads a certificate library.
 * @module
 */

export interface DnAttribute { readonly shortName: string; readonly value: string }

const DN_PART = /^(CN|O|OU|C|L|ST|serialNumber|emailAddress)=([^,=+]+)$/

/** `CN=acme-bsp,O=ACME` → attributes; throws with a message saying what is wrong. */
export function parseDn (dn: string): DnAttribute[] {
  const parts = dn.split(',').map(p => p.trim()).filter(Boolean)
  if (parts.length === 0) throw new TypeError('empty subject; expected e.g. CN=acme-bsp,O=ACME')
  return parts.map(p => {
    const m = DN_PART.exec(p)
    if (!m) throw new TypeError(`bad subject part '${p}'; expected KEY=VALUE with KEY in CN, O, OU, C, L, ST`)
    return { shortName: m[1]!, value: m[2]!.trim() }
  })
}

/**
 * One spelling per subject, whatever the order of attributes: sorted `K=V` joined
 * by commas. Accepts a DN string or node's `getPeerCertificate().subject` object.
 */
export function canonicalSubject (subject: string | Readonly<Record<string, string | string[] | undefined>>): string {
  const pairs: string[] = []
  if (typeof subject === 'string') {
    for (const a of parseDn(subject)) pairs.push(`${a.shortName}=${a.value}`)
  } else {
    for (const [k, v] of Object.entries(subject)) {
      if (v === undefined) continue
      for (const one of Array.isArray(v) ? v : [v]) pairs.push(`${k}=${one}`)
    }
  }
  return pairs.sort().join(',')
}
