// A GET of a URL a client gave (a task's file_url) that connects only to public addresses (core/outbound-address.ts)
// or to a host the operator allowed (TASK_IMPORT_ALLOWED_HOSTS). The host is resolved here, every address it resolves
// to is checked, and the connection goes to those checked addresses: a DNS answer that changes between the check and
// the connection (rebinding) is never used. A redirect is followed (at most MAX_REDIRECTS) through the same check.
import { lookup as resolve, type LookupAddress } from 'node:dns'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { LookupFunction } from 'node:net'
import { allowedHost, isIpAddress, refusedAddress } from '../../core/outbound-address.ts'

const MAX_REDIRECTS = 5

/** The URL may not be fetched; the message says why, after "file_url". */
export class RefusedUrl extends Error {}

const ALLOWANCE = 'an operator allows an internal host with TASK_IMPORT_ALLOWED_HOSTS'

const refusal = (host: string, address: string, why: string): RefusedUrl =>
  new RefusedUrl(`must name a public host: ${host === address ? host : `${host} resolves to ${address}, which`} is ${/^[aeiou]/.test(why) ? 'an' : 'a'} ${why} address (${ALLOWANCE})`)

/** Resolves like the default lookup, then refuses the answer if any address in it is not public. */
const checkedLookup: LookupFunction = (hostname, options, callback) => {
  resolve(hostname, { family: options.family, hints: options.hints, all: true }, (err, addresses: LookupAddress[]) => {
    const done = callback as (err: Error | null, address: string | LookupAddress[], family?: number) => void
    if (err) return done(err, '')
    for (const { address } of addresses) {
      const why = refusedAddress(address)
      if (why) return done(refusal(hostname, address, why), '')
    }
    if (options.all) done(null, addresses)
    else done(null, addresses[0].address, addresses[0].family)
  })
}

/** The response to GET `url` once its headers came (after redirects); throws RefusedUrl for a host it may not reach. */
export async function getPublic(url: URL, allowedHosts: readonly string[], signal: AbortSignal, redirects = 0): Promise<IncomingMessage> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const allowed = allowedHost(allowedHosts, url.hostname, port)
  // An address in the URL is connected to without a lookup: it is checked here.
  if (!allowed && isIpAddress(url.hostname)) {
    const why = refusedAddress(url.hostname)
    if (why) throw refusal(url.hostname, url.hostname, why)
  }
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest
  const res = await new Promise<IncomingMessage>((answered, failed) => {
    // agent false: a new connection each time, never a pooled one whose address was not checked.
    const req = request(url, { method: 'GET', signal, agent: false, ...(!allowed && { lookup: checkedLookup }) }, answered)
    req.once('error', failed)
    req.end()
  })
  const status = res.statusCode ?? 0
  const location = res.headers.location
  if (status < 300 || status >= 400 || !location) return res
  res.resume()
  if (redirects >= MAX_REDIRECTS) throw new RefusedUrl(`was redirected more than ${MAX_REDIRECTS} times`)
  const next = new URL(location, url)
  if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new RefusedUrl(`was redirected to a ${next.protocol.replace(/:$/, '')} URL; only http(s) is fetched`)
  return getPublic(next, allowedHosts, signal, redirects + 1)
}
