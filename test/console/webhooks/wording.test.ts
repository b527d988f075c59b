import t from 'tap'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { isEpxError, type EpxError } from '../../../src/errors.ts'
import { echoCheck } from '../../../src/webhooks/echo-check.ts'
import { refusalFr } from '../../../src/console/webhooks/wording.ts'
import { startReceiver, WEBHOOK_CA } from '../../helpers/webhook-receiver.ts'
import { testPki } from '../../helpers/certs.ts'

// The console words each refusal of `epx webhook add`'s checks in French, saying what to
// fix: every reason the checks give (their real errors, not copies of their text) reads
// as French, with no English left but the technical cause of an unreachable endpoint.

const open = { allowPrivateNetworks: true, requestTimeoutMs: 2_000, ca: WEBHOOK_CA() }

async function refusal (url: string, connect = open): Promise<EpxError> {
  try {
    await echoCheck(url, connect)
  } catch (err) {
    if (isEpxError(err)) return err
    throw err
  }
  throw new Error(`${url} passed`)
}

const ENGLISH = /\b(it|the|not|give|allowed|answered|resolves|address)\b/

t.test('each refusal of the address, in French', async t => {
  const cases: Array<[string, RegExp, boolean?]> = [
    ['bsp.example/hooks', /^Adresse refusée : ce n'est pas une URL : indiquez une URL absolue commençant par https:\/\/\.$/],
    ['http://bsp.example/hooks', /^Adresse refusée : le schéma « http » n'est pas accepté/],
    ['https://user:pw@bsp.example/hooks', /^Adresse refusée : un identifiant ou un mot de passe dans l'URL n'est pas accepté/],
    ['https://bsp.example/hooks#top', /^Adresse refusée : un fragment \(#…\) n'est jamais envoyé : retirez-le/],
    ['https://127.0.0.1/hooks', /^Adresse refusée : 127\.0\.0\.1, une adresse de bouclage : indiquez une adresse joignable sur l'internet public/, false],
    ['https://[fe80::1]/hooks', /^Adresse refusée : fe80::1, une adresse lien-local : /, false],
    ['https://10.1.2.3/hooks', /une adresse privée/, false],
  ]
  for (const [url, want, allow = true] of cases) {
    const err = await refusal(url, { ...open, allowPrivateNetworks: allow })
    t.equal(err.code, 'EPX_WEBHOOK_REFUSED', url)
    const fr = refusalFr(err, url)
    t.match(fr, want, url)
    t.notMatch(fr, ENGLISH, `${url}: no English left`)
  }
})

t.test('a name that resolves to a private address is refused when connected to, in French', async t => {
  const r = await startReceiver(t, { secret: () => [] })
  const err = await refusal(r.url, { ...open, allowPrivateNetworks: false })
  t.equal(err.code, 'EPX_WEBHOOK_REFUSED')
  t.match(refusalFr(err, r.url), /^Adresse refusée : localhost désigne (127\.0\.0\.1|::1), une adresse de bouclage : /)
})

t.test('each failed echo, in French, with what the endpoint must answer', async t => {
  const status = await startReceiver(t, { secret: () => [], echo: () => ({ status: 404, body: 'no' }) })
  const value = await startReceiver(t, { secret: () => [], echo: () => ({ status: 200, body: 'pong' }) })
  const must = /Il doit répondre à GET <url>\?echo=<valeur> par 200 avec la valeur seule dans le corps de la réponse ; corrigez-le, puis ajoutez-le de nouveau\.$/
  for (const [url, want] of [
    [status.url, /^Le point de terminaison n'a pas passé la vérification : elle a répondu 404 au lieu de 200\. /],
    [value.url, /^Le point de terminaison n'a pas passé la vérification : elle a répondu 200 avec « pong » au lieu de la valeur « [A-Za-z0-9_-]{16} »\. /],
  ] as const) {
    const err = await refusal(url)
    t.equal(err.code, 'EPX_WEBHOOK_ECHO_FAILED')
    t.match(refusalFr(err, url), want)
    t.match(refusalFr(err, url), must)
    t.notMatch(refusalFr(err, url), ENGLISH)
  }

  // An HTTPS server that takes the request and never answers; then the same port closed.
  const sockets = new Set<{ destroy(): void }>()
  const { server: pair } = testPki()
  const silent = createServer({ cert: pair.certPem, key: pair.keyPem }, () => {})
  silent.on('connection', s => { sockets.add(s) })
  await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
  const port = (silent.address() as AddressInfo).port
  const url = `https://localhost:${port}/hooks`
  const slow = await refusal(url, { ...open, requestTimeoutMs: 300 })
  t.match(refusalFr(slow, url), /^Le point de terminaison n'a pas passé la vérification : pas de réponse en 300 ms\. Il doit/)
  for (const s of sockets) s.destroy()
  await new Promise(resolve => silent.close(resolve))
  const closed = await refusal(url)
  t.match(refusalFr(closed, url), /^Le point de terminaison n'a pas passé la vérification : elle n'a pas pu être jointe \(.*ECONNREFUSED.*\)\. Il doit/)
})
