// When a failed push to a connected provider (a payment provider's invoice, an accounting system's record) is tried
// again: waits doubling from 1 minute up to an hour, given up (FAILED) after 10 attempts, about 5 hours in all.

const MAX_SYNC_ATTEMPTS = 10

/** The next attempt after `attempts` failed ones, or null: given up. */
export function nextSyncAttempt(attempts: number, now: Date): Date | null {
  return attempts >= MAX_SYNC_ATTEMPTS ? null : new Date(now.getTime() + Math.min(2 ** (attempts - 1), 60) * 60_000)
}
