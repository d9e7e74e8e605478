// Group commit: requests for one key (a wallet, a meter's usage) that arrive while a batch of that key is in
// flight wait and then run together as the next batch, so N concurrent requests cost one batch (one
// transaction, one query) instead of N. A lone request waits only for the current tick's other arrivals.
// Each caller gets its own answer: `run` returns one outcome per request, in order; if `run` itself
// throws, every request of that batch fails with its error.

export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown }

interface Waiting<Q, R> {
  request: Q
  resolve: (value: R) => void
  reject: (error: unknown) => void
}

export class GroupCommit<Q, R> {
  private readonly queues = new Map<string, Waiting<Q, R>[]>()
  private readonly running = new Set<string>()
  /** Keys whose next batch waits for this many requests, or for its timer. */
  private readonly gathering = new Map<string, { target: number; timer: NodeJS.Timeout }>()

  /**
   * `max`: the most requests one batch takes (a bound on statement size); the rest wait for the next. `gatherMs`:
   * when a batch ends with requests queued, the next waits until the callers just answered have sent as many again,
   * or this long at most: with N callers in a loop, batches otherwise settle at about N/2 each.
   */
  constructor(
    private readonly run: (key: string, requests: Q[]) => Promise<Outcome<R>[]>,
    private readonly options: { max?: number; gatherMs?: number } = {},
  ) {}

  submit(key: string, request: Q): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.queues.get(key)
      if (queue) {
        queue.push({ request, resolve, reject })
        const gather = this.gathering.get(key)
        if (gather && queue.length >= gather.target) {
          clearTimeout(gather.timer)
          this.gathering.delete(key)
          setImmediate(() => void this.next(key))
        }
      } else {
        this.queues.set(key, [{ request, resolve, reject }])
        // setImmediate: requests read from other sockets in this same turn of the loop join the first batch.
        if (!this.running.has(key)) setImmediate(() => void this.next(key))
      }
    })
  }

  private async next(key: string): Promise<void> {
    const queue = this.queues.get(key)
    if (!queue || this.running.has(key)) return
    const batch = queue.splice(0, this.options.max ?? 500)
    if (queue.length === 0) this.queues.delete(key)
    this.running.add(key)
    try {
      const outcomes = await this.run(
        key,
        batch.map((w) => w.request),
      )
      batch.forEach((w, i) => {
        const o = outcomes[i]
        if (o.ok) w.resolve(o.value)
        else w.reject(o.error)
      })
    } catch (error) {
      for (const w of batch) w.reject(error)
    } finally {
      this.running.delete(key)
      const waiting = this.queues.get(key)?.length ?? 0
      if (waiting > 0) {
        const target = waiting + batch.length
        if (!this.options.gatherMs || waiting >= target) void this.next(key)
        else {
          const timer = setTimeout(() => {
            this.gathering.delete(key)
            void this.next(key)
          }, this.options.gatherMs)
          this.gathering.set(key, { target, timer })
        }
      }
    }
  }
}
