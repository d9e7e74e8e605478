// Which addresses a fetch the server makes on a client's behalf (a task's file_url) may connect to: public unicast
// only, so that an API key cannot make the server read its own loopback services, the cloud metadata endpoint
// (169.254.169.254) or the private network behind it. An operator allows named internal hosts by host[:port].

/** The four octets of a dotted-quad IPv4 address, or undefined. */
function ipv4(text: string): number[] | undefined {
  const parts = text.split('.')
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return undefined
  const octets = parts.map(Number)
  return octets.every((o) => o <= 255) ? octets : undefined
}

/** The eight 16-bit groups of an IPv6 address (`::` shortening, a trailing dotted quad, a `%zone` allowed), or undefined. */
function ipv6(text: string): number[] | undefined {
  const address = text.replace(/%.*$/, '')
  if (!address.includes(':')) return undefined
  const halves = address.split('::')
  if (halves.length > 2) return undefined
  const groupsOf = (part: string): number[] | undefined => {
    if (part === '') return []
    const groups: number[] = []
    const pieces = part.split(':')
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = ipv4(piece)
        if (!v4) return undefined
        groups.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3])
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) groups.push(parseInt(piece, 16))
      else return undefined
    }
    return groups
  }
  const head = groupsOf(halves[0])
  const tail = halves.length === 2 ? groupsOf(halves[1]) : []
  if (!head || !tail) return undefined
  if (halves.length === 1) return head.length === 8 ? head : undefined
  const missing = 8 - head.length - tail.length
  return missing >= 1 ? [...head, ...Array<number>(missing).fill(0), ...tail] : undefined
}

const inV4 = (o: number[], prefix: number[], bits: number): boolean => {
  const value = (o[0] * 2 ** 24 + o[1] * 2 ** 16 + o[2] * 2 ** 8 + o[3]) >>> 0
  const base = (prefix[0] * 2 ** 24 + prefix[1] * 2 ** 16 + prefix[2] * 2 ** 8 + prefix[3]) >>> 0
  return bits === 0 || value >>> (32 - bits) === base >>> (32 - bits)
}

/** IPv4 ranges refused, most specific kinds first. */
const V4_REFUSED: [number[], number, string][] = [
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[10, 0, 0, 0], 8, 'private'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 168, 0, 0], 16, 'private'],
  [[100, 64, 0, 0], 10, 'private (carrier-grade NAT)'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
]

function v4Refusal(o: number[]): string | undefined {
  return V4_REFUSED.find(([prefix, bits]) => inV4(o, prefix, bits))?.[2]
}

function v6Refusal(g: number[]): string | undefined {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0)
  if (zeros(0, 8)) return 'unspecified'
  if (zeros(0, 7) && g[7] === 1) return 'loopback'
  // IPv4 in IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) reach that IPv4 address.
  const embedded = (zeros(0, 5) && (g[5] === 0xffff || g[5] === 0)) || (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6))
  if (embedded) return v4Refusal([g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff])
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local'
  if ((g[0] & 0xfe00) === 0xfc00 || (g[0] & 0xffc0) === 0xfec0) return 'private'
  if ((g[0] & 0xff00) === 0xff00) return 'multicast'
  return undefined
}

/**
 * Why the server must not connect to this IP address — `loopback`, `link-local`, `private`, `unspecified`,
 * `multicast`, `reserved` — or undefined for a public unicast one. Text that is no IP address is refused too.
 */
export function refusedAddress(address: string): string | undefined {
  const bare = address.replace(/^\[(.*)\]$/, '$1')
  const v4 = ipv4(bare)
  if (v4) return v4Refusal(v4)
  const v6 = ipv6(bare)
  if (v6) return v6Refusal(v6)
  return 'not an IP address'
}

/** True when the text is an IP address (IPv6 with or without brackets) rather than a host name. */
export const isIpAddress = (host: string): boolean => {
  const bare = host.replace(/^\[(.*)\]$/, '$1')
  return ipv4(bare) !== undefined || ipv6(bare) !== undefined
}

/** Why an allowance entry (`host` or `host:port`, an IPv6 address in brackets) is malformed, or undefined. */
export function allowanceEntryProblem(entry: string): string | undefined {
  return /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/.test(entry) ? undefined : 'is not host or host:port'
}

/**
 * True when `host` (as a URL names it: lower case, IPv6 in brackets) on `port` is allowed by an entry: the same host
 * with no port (any port) or with that port.
 */
export function allowedHost(entries: readonly string[], host: string, port: number): boolean {
  const name = host.toLowerCase()
  return entries.some((entry) => {
    const e = entry.toLowerCase()
    return e === name || e === `${name}:${port}`
  })
}
