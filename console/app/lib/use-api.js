// Loads data for a component and keeps its error: {data, error, loading, reload}. A stale answer
// (the inputs changed meanwhile) is dropped, so a slow first page never overwrites the second.
import { useCallback, useEffect, useRef, useState } from './html.js'

export function useApi(load, deps) {
  const [state, setState] = useState({ data: undefined, error: undefined, loading: true })
  const seq = useRef(0)
  const run = useCallback(() => {
    const mine = ++seq.current
    setState((s) => ({ ...s, loading: true }))
    Promise.resolve()
      .then(load)
      .then(
        (data) => mine === seq.current && setState({ data, error: undefined, loading: false }),
        (error) => mine === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
      )
  }, deps)
  useEffect(run, [run])
  return { ...state, reload: run }
}
