/**
 * Where epx may send a webhook (DECISIONS.md "Events for BSPs"): `https` only, and never
 * to a loopback, private, link-local or otherwise non-public address unless
 * `webhooks.allowPrivateNetworks`, so that a company registering an endpoint cannot make
 * epx call the services beside it. The host is resolved and every address it gives is
 * checked, and the connection is made through the same checked resolution
 * (`checkedLookup`, handed to the socket): a name that resolves elsewhere between the check
 * and the connection (DNS rebinding) is checked again there.
 * @module
 */
import { lookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { EpxError } from '../errors.ts'

/** Address ranges that are not the public internet, by what an operator calls them (RFC 6890's special-purpose registries). */
const RANGES: ReadonlyArray<readonly [name: string, family: 'ipv4' | 'ipv6', prefix: string, bits: number]> = [
  ['a loopback address', 'ipv4', '127.0.0.0', 8],
  ['a loopback address', 'ipv6', '::1', 128],
  ['a private address', 'ipv4', '10.0.0.0', 8],
  ['a private address', 'ipv4', '172.16.0.0', 12],
  ['a private address', 'ipv4', '192.168.0.0', 16],
  ['a private address', 'ipv4', '100.64.0.0', 10],
  ['a private address', 'ipv6', 'fc00::', 7],
  ['a link-local address', 'ipv4', '169.254.0.0', 16],
  ['a link-local address', 'ipv6', 'fe80::', 10],
  ['an unspecified address', 'ipv4', '0.0.0.0', 8],
  ['an unspecified address', 'ipv6', '::', 128],
  ['a reserved address', 'ipv4', '192.0.0.0', 24],
  ['a reserved address', 'ipv4', '198.18.0.0', 15],
  ['a reserved address', 'ipv4', '240.0.0.0', 4],
  ['a multicast address', 'ipv4', '224.0.0.0', 4],
  ['a multicast address', 'ipv6', 'ff00::', 8],
  // An IPv4 address written as IPv6 is checked as the IPv4 address it is (below).
]

const lists = new Map<string, BlockList>()
for (const [name, family, prefix, bits] of RANGES) {
  let list = lists.get(name)
  if (!list) lists.set(name, list = new BlockList())
  list.addSubnet(prefix, bits, family)
}

const MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i

/** What kind of non-public address `address` is (`a loopback address`…), or undefined for a public one. */
export function nonPublicKind (address: string): string | undefined {
  const mapped = MAPPED.exec(address)?.[1]
  const ip = mapped ?? address
  const family = isIP(ip) === 4 ? 'ipv4' : 'ipv6'
  for (const [name, list] of lists) if (list.check(ip, family)) return name
  return undefined
}

/** The refusal of an address: what it is and what to do about it. */
function refused (url: string, host: string, address: string, kind: string): EpxError {
  return new EpxError('EPX_WEBHOOK_REFUSED', [url, `${host === address ? address : `${host} resolves to ${address}`}, ${kind}: give an endpoint reachable on the public internet, or set webhooks.allowPrivateNetworks to allow private networks`])
}

/**
 * The endpoint's URL checked for its form: `https`, no credentials, no fragment, and an IP
 * literal checked at once. Its name's addresses are checked when it is connected to.
 */
export function checkEndpointUrl (text: string, allowPrivateNetworks: boolean): URL {
  let url: URL
  try { url = new URL(text) } catch { throw new EpxError('EPX_WEBHOOK_REFUSED', [text, 'not a URL: give an absolute https:// URL']) }
  if (url.protocol !== 'https:') throw new EpxError('EPX_WEBHOOK_REFUSED', [text, `${url.protocol.slice(0, -1)} is not allowed: webhooks go to https:// endpoints only`])
  if (url.username || url.password) throw new EpxError('EPX_WEBHOOK_REFUSED', [text, 'credentials in the URL are not allowed: the signature (webhook-signature) authenticates epx to the endpoint'])
  if (url.hash) throw new EpxError('EPX_WEBHOOK_REFUSED', [text, 'a fragment (#...) is not sent: remove it'])
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!allowPrivateNetworks && isIP(host)) {
    const kind = nonPublicKind(host)
    if (kind) throw refused(text, host, host, kind)
  }
  return url
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `dns.lookup` for the endpoint's sockets that refuses a name any of whose addresses is
 * not public (unless `allowPrivateNetworks`): given as the connection's `lookup`, so the
 * addresses checked are the ones connected to.
 */
export function checkedLookup (url: string, allowPrivateNetworks: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, [])
      if (!allowPrivateNetworks) {
        for (const { address } of addresses) {
          const kind = nonPublicKind(address)
          if (kind) return callback(Object.assign(refused(url, hostname, address, kind), { errno: undefined }) as NodeJS.ErrnoException, [])
        }
      }
      if (options.all) return callback(null, addresses)
      const first = addresses[0]
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), [])
      callback(null, first.address, first.family)
    })
  }
}
