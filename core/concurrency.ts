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
