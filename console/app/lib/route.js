// Hash routes (#/customers/cus_…?offset=20): the console is static files, so the server never needs
// to know its paths, and the back button and links work as in any page.
import { useEffect, useState } from './html.js'

function parseHash(hash = location.hash) {
  const [path, qs = ''] = hash.replace(/^#/, '').split('?')
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent)
  return { parts, query: Object.fromEntries(new URLSearchParams(qs)) }
}

export function useRoute() {
  const [route, setRoute] = useState(parseHash())
  useEffect(() => {
    const on = () => setRoute(parseHash())
    addEventListener('hashchange', on)
    return () => removeEventListener('hashchange', on)
  }, [])
  return route
}

/** A link target: href(['customers', id]) → "#/customers/cus_…". */
export const href = (parts, query) => {
  const qs = query ? new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== '')).toString() : ''
  return `#/${parts.map(encodeURIComponent).join('/')}${qs ? `?${qs}` : ''}`
}

const go = (parts, query) => {
  location.hash = href(parts, query)
}
