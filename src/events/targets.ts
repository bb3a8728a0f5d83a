// Outbound URL checks, one rule for every request the service sends (event deliveries and
// transfers). Private and loopback targets are allowed unless EVENT_BLOCK_PRIVATE_TARGETS=1
// (operator-api.md "Signatures"); then a host that is, or resolves to, such an address is
// refused on the admin call and again at each send. At send time the name is resolved once
// by `guardedLookup`, the connection's own lookup hook, so the address checked is the
// address connected to (a second resolution could answer differently: DNS rebinding).
import dns from 'node:dns'
import net from 'node:net'

/** A problem with `url` as a subscriber target, or null when it is usable. */
export function urlProblem(url: unknown): string | null {
  if (typeof url !== 'string' || url.length === 0) return 'The url field is required.'
  if (url.length > 2048) return 'The url field must be at most 2048 characters.'
  let u: URL
  try {
    u = new URL(url)
  } catch {
    return 'The url field must be an absolute http or https URL.'
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return 'The url field must be an absolute http or https URL.'
  if (!u.hostname) return 'The url field must name a host.'
  if (u.username || u.password) return 'The url field must not carry credentials.'
  return null
}

const blocked = new net.BlockList()
for (const [net4, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net4, prefix, 'ipv4')
// IPv4-mapped addresses (::ffff:a.b.c.d in any spelling) are judged by BlockList against
// the IPv4 rules above. Ranges that embed or translate an IPv4 address in a way that can
// reach an internal host are refused whole: IPv4-compatible (::/96, e.g. [::7f00:1]),
// NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48), 6to4 (2002::/16), Teredo
// (2001::/32).
for (const [net6, prefix] of [
  ['::', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net6, prefix, 'ipv6')

export function isPrivateAddress(ip: string): boolean {
  const family = net.isIP(ip)
  if (family === 4) return blocked.check(ip, 'ipv4')
  if (family === 6) return blocked.check(ip.replace(/%.*$/, ''), 'ipv6')
  return false
}

const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost')

export class PrivateTargetError extends Error {
  readonly code = 'EPRIVATETARGET'
  constructor(host: string) {
    super(`refused: ${host} is a private or loopback target (EVENT_BLOCK_PRIVATE_TARGETS=1)`)
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void

/**
 * A `lookup` for http(s).request that resolves the name once and hands the connection only
 * addresses it checked; a name with any private address is refused as a whole (a mixed
 * answer is how rebinding attacks look). `dns.lookup` is read at call time.
 */
export function guardedLookup(
  hostname: string,
  options: dns.LookupOptions,
  callback: LookupCallback,
): void {
  if (isLocalhostName(hostname.toLowerCase())) {
    callback(new PrivateTargetError(hostname), '')
    return
  }
  dns.lookup(hostname, { ...options, all: true }, (err, addrs) => {
    if (err) return callback(err, '')
    if (addrs.length === 0 || addrs.some((a) => isPrivateAddress(a.address)))
      return callback(new PrivateTargetError(hostname), '')
    if (options.all) return callback(null, addrs)
    callback(null, addrs[0]!.address, addrs[0]!.family)
  })
}

/**
 * The checks to run before sending to `url`: an IP literal (which the connection never
 * resolves) is judged here; a name is judged by `guardedLookup` while connecting. Returns
 * the refusal, or null.
 */
export function literalProblem(url: string): PrivateTargetError | null {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
  if (net.isIP(host)) return isPrivateAddress(host) ? new PrivateTargetError(host) : null
  return null
}

/** True when the URL's host is, or resolves to, a private or loopback address. */
export async function isPrivateTarget(url: string): Promise<boolean> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
  if (net.isIP(host)) return isPrivateAddress(host)
  if (isLocalhostName(host.toLowerCase())) return true
  try {
    const addrs = await dns.promises.lookup(host, { all: true })
    return addrs.some((a) => isPrivateAddress(a.address))
  } catch {
    // Unresolvable now: not known to be private; the delivery itself will fail and retry.
    return false
  }
}
