// Per-key token bucket: `rate` requests per second sustained, bursts up to twice that.
import { AppError } from '../core/errors.ts'

interface Bucket {
  tokens: number
  at: number
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>()
  constructor(private readonly rate: number) {}

  take(key: string, now = Date.now()): void {
    const capacity = this.rate * 2
    const bucket = this.buckets.get(key) ?? { tokens: capacity, at: now }
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.rate)
    bucket.at = now
    this.buckets.set(key, bucket)
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / this.rate))
      throw new AppError('too_many_requests', `rate limit of ${this.rate} requests per second exceeded`, { limit_per_second: this.rate }, { retryAfter })
    }
    bucket.tokens -= 1
  }
}
