// Bounded concurrency for jobs that overlap I/O (usage reads, HTTP deliveries) without flooding a pool.

/**
 * Runs `work` over `items` with at most `n` at a time, each item once, in order of start; resolves
 * when all are done and rejects with the first error (the others already started still finish).
 */
export async function inParallel<T>(items: readonly T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await work(items[next++])
  }
  await Promise.all(Array.from({ length: Math.max(0, Math.min(n, items.length)) }, worker))
}

/** Lets waiting timers and I/O run (HTTP requests of the same process): a long job awaits this between units of work. */
export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * A pause for long loops of pure work: yields to the event loop once `budgetMs` have passed since the last
 * yield, else returns at once, so a job holds the thread at most that long and costs little when quick.
 */
export function timeSlicer(budgetMs = 10): () => Promise<void> {
  let since = performance.now()
  return async () => {
    if (performance.now() - since < budgetMs) return
    await yieldToLoop()
    since = performance.now()
  }
}
