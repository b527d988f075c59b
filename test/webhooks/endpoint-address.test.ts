import t from 'tap'
import { checkEndpointUrl, checkedLookup, nonPublicKind } from '../../src/webhooks/endpoint-address.ts'

// DECISIONS.md "Events for BSPs": only https endpoints, never a loopback or private address
// unless webhooks.allowPrivateNetworks.

t.test('an address is public, or says what it is', async t => {
  const kinds = Object.fromEntries(['127.0.0.1', '::1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', 'fd00::1',
    '169.254.169.254', 'fe80::1', '0.0.0.0', '::', '224.0.0.1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '8.8.8.8', '172.32.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8']
    .map(a => [a, nonPublicKind(a) ?? 'public']))
  t.same(kinds, {
    '127.0.0.1': 'a loopback address', '::1': 'a loopback address', '10.1.2.3': 'a private address', '172.16.0.1': 'a private address',
    '172.31.255.255': 'a private address', '192.168.1.1': 'a private address', '100.64.0.1': 'a private address', 'fd00::1': 'a private address',
    '169.254.169.254': 'a link-local address', 'fe80::1': 'a link-local address', '0.0.0.0': 'an unspecified address', '::': 'an unspecified address',
    '224.0.0.1': 'a multicast address', '::ffff:127.0.0.1': 'a loopback address', '::ffff:10.0.0.1': 'a private address',
    '8.8.8.8': 'public', '172.32.0.1': 'public', '2001:4860:4860::8888': 'public', '::ffff:8.8.8.8': 'public',
  })
})

t.test('an endpoint URL is https, without credentials or fragment; an IP literal is checked at once', async t => {
  t.equal(checkEndpointUrl('https://hooks.example/epx?x=1', false).href, 'https://hooks.example/epx?x=1')
  const refused = (url: string, allow = false) => t.throws(() => checkEndpointUrl(url, allow), { code: 'EPX_WEBHOOK_REFUSED' })
  refused('http://hooks.example/epx')
  refused('not a url')
  refused('https://user:pw@hooks.example/')
  refused('https://hooks.example/#x')
  t.throws(() => checkEndpointUrl('https://169.254.169.254/latest', false), { message: /169\.254\.169\.254, a link-local address: .*webhooks\.allowPrivateNetworks/ })
  refused('https://[::1]:8443/')
  t.equal(checkEndpointUrl('https://127.0.0.1:8443/', true).port, '8443', 'allowed with webhooks.allowPrivateNetworks')
})

t.test('the connection\'s lookup refuses a name any of whose addresses is not public', async t => {
  const looked = (host: string, allow: boolean) => new Promise<{ err: Error | null; address: unknown }>(resolve =>
    checkedLookup(`https://${host}/`, allow)(host, { all: true }, (err, address) => resolve({ err, address })))
  t.match((await looked('localhost', false)).err, { code: 'EPX_WEBHOOK_REFUSED', message: /localhost resolves to .*a loopback address/ })
  const allowed = await looked('localhost', true)
  t.equal(allowed.err, null)
  t.ok(Array.isArray(allowed.address) && allowed.address.length > 0, 'every address, as the socket asked')
})
