/**
 * The webhook pages' words in French: the event types, and the refusals of an endpoint.
 * The checks are `webhooks/endpoint-address.ts` and `webhooks/echo-check.ts` (shared with
 * `epx webhook add`, which shows their English for a terminal); this door words each of
 * their reasons as its own, as `admin/wording.ts` does for the company rules. A reason it
 * does not know is shown as the check gave it, after a French lead.
 * @module
 */
import type { EventType } from '../../store/events.ts'
import type { EpxError } from '../../errors.ts'

export const TYPE_LABELS: Readonly<Record<EventType, string>> = {
  'besoins_agreges.publie': 'Besoins agrégés publiés pour un site et un jour',
  'instruction.statut': 'Statut d\'une instruction de l\'entreprise (en file, appliquée, remplacée, retirée, tardive)',
  'realise.modifie': 'Réalisé modifié pour un site et un jour (au plus une fois toutes les 5 minutes)',
  'perimetre.modifie': 'Périmètre modifié (sites ajoutés ou retirés)',
}

const KINDS: Readonly<Record<string, string>> = {
  'a loopback address': 'une adresse de bouclage',
  'a private address': 'une adresse privée',
  'a link-local address': 'une adresse lien-local',
  'an unspecified address': 'une adresse non spécifiée',
  'a reserved address': 'une adresse réservée',
  'a multicast address': 'une adresse de multidiffusion',
}

/** Each reason the checks give, read back into French. */
const REASONS: ReadonlyArray<readonly [RegExp, (...m: string[]) => string]> = [
  [/^not a URL/, () => 'ce n\'est pas une URL : indiquez une URL absolue commençant par https://.'],
  [/^(\S+) is not allowed: webhooks go to https/, p => `le schéma « ${p} » n'est pas accepté : les webhooks ne partent que vers des adresses https://.`],
  [/^credentials in the URL/, () => 'un identifiant ou un mot de passe dans l\'URL n\'est pas accepté : retirez-le, la signature (en-tête webhook-signature) authentifie epx auprès de votre point de terminaison.'],
  [/^a fragment/, () => 'un fragment (#…) n\'est jamais envoyé : retirez-le de l\'URL.'],
  [/^(?:(\S+) resolves to )?(\S+), (an? [a-z-]+ address): give an endpoint reachable on the public internet/, (host, address, kind) =>
    `${host ? `${host} désigne ${address}` : address}, ${KINDS[kind!] ?? kind} : indiquez une adresse joignable sur l'internet public (l'exploitant du service peut autoriser les réseaux privés, webhooks.allowPrivateNetworks).`],
  [/^it answered (\d{3})$/, status => `elle a répondu ${status} au lieu de 200.`],
  [/^it answered 200 with (".*"), not the value (".*")$/s, (got, want) => `elle a répondu 200 avec ${quoted(got!)} au lieu de la valeur ${quoted(want!)}.`],
  [/^no answer within (\d+) ms/, ms => `pas de réponse en ${ms} ms.`],
  [/^it could not be reached \((.*)\)$/s, cause => `elle n'a pas pu être jointe (${cause}).`],
]

/** A JSON string as « text ». */
function quoted (json: string): string {
  try { return `« ${JSON.parse(json) as string} »` } catch { return json }
}

/** What the check said, after the URL: `webhook endpoint URL refused: REASON` or `… failed the echo check: REASON; it must …`. */
function reasonOf (err: EpxError, url: string): string {
  const lead = `webhook endpoint ${url} `
  const rest = err.message.startsWith(lead) ? err.message.slice(lead.length) : err.message
  const reason = rest.replace(/^refused: /, '').replace(/^failed the echo check: /, '')
  return err.code === 'EPX_WEBHOOK_ECHO_FAILED' ? reason.replace(/; it must answer GET <url>\?echo=.*$/s, '') : reason
}

/** The refusal of `url` (EPX_WEBHOOK_REFUSED or EPX_WEBHOOK_ECHO_FAILED) in French, saying what to fix. */
export function refusalFr (err: EpxError, url: string): string {
  const reason = reasonOf(err, url)
  let said: string | undefined
  for (const [pattern, word] of REASONS) {
    const m = pattern.exec(reason)
    if (m) { said = word(...m.slice(1)); break }
  }
  if (err.code === 'EPX_WEBHOOK_ECHO_FAILED') {
    return `Le point de terminaison n'a pas passé la vérification : ${said ?? reason} ` +
      'Il doit répondre à GET <url>?echo=<valeur> par 200 avec la valeur seule dans le corps de la réponse ; corrigez-le, puis ajoutez-le de nouveau.'
  }
  return `Adresse refusée : ${said ?? reason}`
}
