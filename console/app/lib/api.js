// The console's only way to the service: the public API, with the pasted key in x-api-key. Every
// failure becomes an ApiError carrying the API's error body ({code, message, details}), so pages can
// show the message and the field it names instead of failing silently.

export class ApiError extends Error {
  /** @param {number} status  @param {{code?: string, message?: string, details?: Record<string, unknown>}} body */
  constructor(status, body) {
    super(body?.message || `HTTP ${status}`)
    this.status = status
    this.code = body?.code || (status === 0 ? 'network_error' : 'error')
    this.details = body?.details && typeof body.details === 'object' ? body.details : {}
  }
}

/** Query string from an object; arrays repeat the key, empty values are left out. */
function queryString(query = {}) {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue
    for (const one of Array.isArray(v) ? v : [v]) params.append(k, String(one))
  }
  const s = params.toString()
  return s ? `?${s}` : ''
}

async function errorOf(res) {
  const text = await res.text().catch(() => '')
  let body
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    body = { message: `${res.status} ${res.statusText}: ${text.slice(0, 200)}` }
  }
  return new ApiError(res.status, body ?? { message: `${res.status} ${res.statusText}` })
}

/** A client bound to one key. `raw` answers the Response itself (PDF, CSV), still throwing on errors. */
export function apiClient(key) {
  async function request(method, path, { body, query, raw } = {}) {
    const headers = { 'x-api-key': key }
    if (body !== undefined) headers['content-type'] = 'application/json'
    let res
    try {
      res = await fetch(path + queryString(query), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    } catch (err) {
      throw new ApiError(0, { code: 'network_error', message: `could not reach the service (${err.message})` })
    }
    if (!res.ok) throw await errorOf(res)
    if (raw) return res
    const text = await res.text()
    return text ? JSON.parse(text) : undefined
  }
  return {
    key,
    get: (path, query) => request('GET', path, { query }),
    post: (path, body = {}) => request('POST', path, { body }),
    put: (path, body = {}) => request('PUT', path, { body }),
    raw: (method, path, body) => request(method, path, { body, raw: true }),
  }
}
