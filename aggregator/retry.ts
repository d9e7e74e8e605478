// Retries with capped exponential backoff. Both the Kafka consumer and direct mode's log inserter keep trying
// until stopped, holding their position (offsets, the log checkpoint).
import { setTimeout as sleep } from 'node:timers/promises'

export interface RetryPolicy {
  attempts: number
  baseMs: number
  maxMs: number
  /** Checked before each wait: true ends the retries with the last error. */
  stopped?: () => boolean
  onError?: (err: unknown, attempt: number) => void
}

/** `permanent` errors end the retries at once: trying the same thing again cannot succeed. */
export async function retry<T>(fn: () => Promise<T>, policy: RetryPolicy, permanent: (err: unknown) => boolean = () => false): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (err) {
      if (permanent(err)) throw err
      policy.onError?.(err, attempt)
      if (attempt >= policy.attempts || policy.stopped?.()) throw err
      await sleep(Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1)))
    }
  }
}
