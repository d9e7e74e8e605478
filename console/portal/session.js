// The portal session's token and the only way to the service: /v1/customer/portal/… with X-Session-Token.
// The link carries the token in its fragment (never sent to a server, nor in a Referer); it is kept in this
// tab's session storage so a reload works, and taken out of the address bar at once.
import { ApiError } from '../app/lib/api.js'

const KEY = 'meterbill.portal.token'

/** The token from the link (#token=…), else the one this tab kept; the fragment is removed from the address bar. */
export function takeToken() {
  const given = new URLSearchParams(location.hash.slice(1)).get('token')
  if (given) {
    sessionStorage.setItem(KEY, given)
    history.replaceState(null, '', location.pathname)
  }
  return sessionStorage.getItem(KEY)
}

export const forgetToken = () => sessionStorage.removeItem(KEY)

/** A client bound to one session. A 401 (expired, revoked) calls `onEnded` once: the page then shows no data. */
export function portalClient(token, onEnded) {
  async function request(method, path, { body, raw } = {}) {
    const headers = { 'x-session-token': token }
    if (body !== undefined) headers['content-type'] = 'application/json'
    let res
    try {
      res = await fetch(`/v1/customer/portal${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    } catch (err) {
      throw new ApiError(0, { code: 'network_error', message: `could not reach the service (${err.message})` })
    }
    if (!res.ok) {
      const parsed = await res.json().catch(() => ({ message: `${res.status} ${res.statusText}` }))
      if (res.status === 401) onEnded(parsed.message)
      throw new ApiError(res.status, parsed)
    }
    if (raw) return res
    return res.json()
  }
  return {
    get: (path) => request('GET', path),
    post: (path, body = {}) => request('POST', path, { body }),
    del: (path) => request('DELETE', path),
    raw: (path) => request('GET', path, { raw: true }),
  }
}
