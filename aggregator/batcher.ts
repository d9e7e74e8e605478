// Direct mode's in-process batcher: requests add their events and wait; events of concurrent requests
// are written together, by rows, bytes or linger time, one batch at a time. A request's events always
// travel in one batch, so a request is stored whole or answered with an error.
import { serviceUnavailable } from '../core/errors.ts'

export interface BatchLimits {
  maxRows: number
  maxBytes: number
  lingerMs: number
  /** Rows waiting beyond this are refused (503) rather than queued without bound. */
  maxPendingRows: number
}

interface Entry<T> {
  items: T[]
  bytes: number
  resolve(): void
  reject(err: unknown): void
}

export class Batcher<T> {
  private queue: Entry<T>[] = []
  private pendingRows = 0
  private pendingBytes = 0
  private timer: NodeJS.Timeout | undefined
  private flushing: Promise<void> | undefined

  constructor(
    private readonly limits: BatchLimits,
    private readonly write: (items: T[]) => Promise<void>,
  ) {}

  /** Resolves once the items are written; rejects with the write's error. */
  add(items: T[], bytes: number): Promise<void> {
    if (this.pendingRows + items.length > this.limits.maxPendingRows) {
      return Promise.reject(serviceUnavailable('event intake is saturated; retry shortly', { pending_events: this.pendingRows }))
    }
    const done = new Promise<void>((resolve, reject) => this.queue.push({ items, bytes, resolve, reject }))
    this.pendingRows += items.length
    this.pendingBytes += bytes
    if (this.pendingRows >= this.limits.maxRows || this.pendingBytes >= this.limits.maxBytes) this.kick()
    else this.timer ??= setTimeout(() => this.kick(), this.limits.lingerMs)
    return done
  }

  /** Writes everything queued; for shutdown. */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.flushing) {
      this.kick()
      await this.flushing
    }
  }

  private kick(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.flushing ??= this.flushLoop().finally(() => {
      this.flushing = undefined
      if (this.queue.length > 0) this.timer ??= setTimeout(() => this.kick(), this.limits.lingerMs)
    })
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch: Entry<T>[] = []
      let rows = 0
      let bytes = 0
      while (this.queue.length > 0 && (batch.length === 0 || (rows + this.queue[0].items.length <= this.limits.maxRows && bytes < this.limits.maxBytes))) {
        const e = this.queue.shift()!
        batch.push(e)
        rows += e.items.length
        bytes += e.bytes
      }
      this.pendingRows -= rows
      this.pendingBytes -= bytes
      try {
        await this.write(batch.flatMap((e) => e.items))
        for (const e of batch) e.resolve()
      } catch (err) {
        for (const e of batch) e.reject(err)
      }
      // Only full batches go on at once; a partial one waits for its linger time to gather more.
      if (this.pendingRows < this.limits.maxRows && this.pendingBytes < this.limits.maxBytes) return
    }
  }
}
