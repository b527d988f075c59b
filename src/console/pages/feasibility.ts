/**
 * What the console says of an instruction's check against the published needs
 * (`apply/feasibility.ts`). Three answers, never merged: **infeasible** (a flag is
 * stored), **checked** (needs of its site and day were published when it came, and it
 * asks no more than they allow) and **not checkable** (nothing was published yet: the
 * check had nothing to compare with, which is not a pass). Only a flag is stored; the
 * other two are read from the kept revisions, as the check read them at reception
 * (`Revisions.latest` then: the newest emitted by then). Read back, not recorded: a
 * revision pruned since (older than the retention) reads as nothing published.
 * @module
 */
import { html, type SafeHtml } from '../html.ts'
import { frNumber } from '../numbers.ts'
import { parisText } from '../time.ts'
import { roundKw } from '../../apply/instruction-view.ts'
import { readUtcInstant } from '../../contract/instants.ts'
import type { Instruction } from '../../contract/instruction.ts'
import type { FeasibilityFlag } from '../../store/instruction-flags.ts'
import type { Revisions } from '../../store/revisions.ts'

export type FeasibilityCheck =
  | { readonly kind: 'infeasible'; readonly flag: FeasibilityFlag }
  /** `against`: emitted_at of the Besoins_Agreges revision it was checked against. */
  | { readonly kind: 'checked'; readonly against: string }
  | { readonly kind: 'unchecked' }

/** The check of one instruction; undefined when the revisions are not at hand (nothing to say). */
export function checkOf (flag: FeasibilityFlag | undefined, revisions: Pick<Revisions, 'list'> | undefined,
  i: Pick<Instruction, 'siteId' | 'targetDate' | 'receivedAt'>): FeasibilityCheck | undefined {
  if (flag) return { kind: 'infeasible', flag }
  if (!revisions) return undefined
  const received = readUtcInstant(i.receivedAt)
  if (typeof received === 'string') return undefined
  let against: { ms: number; at: string } | undefined
  for (const r of revisions.list(i.siteId, i.targetDate)) {
    // The check runs once reception is stamped: a revision of that very millisecond was there to check against.
    if (r.emittedAtMs <= received.ms && (!against || r.emittedAtMs > against.ms)) against = { ms: r.emittedAtMs, at: r.emittedAt }
  }
  return against ? { kind: 'checked', against: against.at } : { kind: 'unchecked' }
}

const LABELS = { infeasible: 'infaisable', checked: 'vérifiée', unchecked: 'non vérifiable' } as const

/** The check as a badge, its sentence in `title` (the instruction's page says it in full). */
export function checkBadge (c: FeasibilityCheck | undefined): SafeHtml {
  if (!c) return html``
  const title = `${LABELS[c.kind]} : ${checkText(c)}`
  if (c.kind === 'infeasible') return html`<strong class="flag-infeasible badge" title="${title}">${LABELS.infeasible}</strong>`
  return html`<span class="badge badge-${c.kind}" title="${title}">${LABELS[c.kind]}</span>`
}

/** The check in a sentence (after its badge), as `epx instructions show` states a flag. */
export function checkText (c: FeasibilityCheck | undefined): string {
  if (!c) return 'non renseignée'
  if (c.kind === 'checked') return `aucun dépassement des Besoins agrégés émis le ${parisText(c.against)}.`
  if (c.kind === 'unchecked') return 'aucun Besoin agrégé n\'était publié pour ce site et ce jour à la réception : rien à quoi la comparer.'
  return feasibilityText(c.flag)
}

/** A stored flag in a sentence. */
export function feasibilityText (f: FeasibilityFlag): string {
  const parts: string[] = []
  const n = f.infeasibleSlots.length
  if (n) {
    const worst = f.infeasibleSlots.reduce((a, b) => b.floorKw - b.availableKw > a.floorKw - a.availableKw ? b : a)
    parts.push(`${n === 1 ? 'un créneau a' : `${frNumber(n)} créneaux ont`} un plancher au-delà de la puissance disponible (jusqu'à ${frNumber(roundKw(worst.floorKw))} kW pour ${frNumber(roundKw(worst.availableKw))} kW disponibles)`)
  }
  const kwh = (v: number) => frNumber(Math.round(v * 10) / 10)
  if (f.day) parts.push(`${kwh(f.day.programmedKwh)} kWh programmés sur le jour pour ${kwh(f.day.needsKwh)} kWh de besoins et ${kwh(f.day.availableKwh)} kWh permis par la puissance disponible`)
  return `${parts.join(' ; ')} — vérifié contre les Besoins agrégés émis le ${parisText(Date.parse(f.checkedAgainst))}. Appliquée tout de même : le solveur décide.`
}
