// Items cut into consecutive runs that each stay within limits (customers a statement, charges priced together).

/**
 * `items` in order, cut into runs: an item starts a new run when adding it would make the current run not `fit`
 * (`fits(count, weight)`: the run's item count and summed `weight` with it). A run holds one item at least, so an item
 * that does not fit alone is a run of its own.
 */
export function runs<T>(items: Iterable<T>, weight: (item: T) => number, fits: (count: number, weight: number) => boolean): T[][] {
  const out: T[][] = []
  let run: T[] = []
  let sum = 0
  for (const item of items) {
    const more = weight(item)
    if (run.length > 0 && !fits(run.length + 1, sum + more)) {
      out.push(run)
      run = []
      sum = 0
    }
    run.push(item)
    sum += more
  }
  if (run.length > 0) out.push(run)
  return out
}
