// Subscriber URL checks. Private and loopback targets are allowed unless
// EVENT_BLOCK_PRIVATE_TARGETS=1 (operator-api.md "Signatures"); then a host that is, or
// resolves to, such an address is refused on the admin call and again before each send
// (a name may resolve differently later).
import dns from 'node:dns/promises'
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
for (const [net6, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net6, prefix, 'ipv6')

export function isPrivateAddress(ip: string): boolean {
  const family = net.isIP(ip)
  if (family === 4) return blocked.check(ip, 'ipv4')
  if (family === 6) {
    // IPv4-mapped (::ffff:a.b.c.d) is judged by its IPv4 address.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
    if (mapped) return blocked.check(mapped[1]!, 'ipv4')
    return blocked.check(ip, 'ipv6')
  }
  return false
}

/** True when the URL's host is, or resolves to, a private or loopback address. */
export async function isPrivateTarget(url: string): Promise<boolean> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
  if (net.isIP(host)) return isPrivateAddress(host)
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  try {
    const addrs = await dns.lookup(host, { all: true })
    return addrs.some((a) => isPrivateAddress(a.address))
  } catch {
    // Unresolvable now: not known to be private; the delivery itself will fail and retry.
    return false
  }
}
