// Reads SDKs make on every request of their own (a customer's entitlements, a wallet's real-time balance)
// answered from memory for at most READ_CACHE_MS, and never across a write of this process: every
// committed write transaction (domains/records/service.ts `transaction`) moves the process's generation on,
// and an entry of an older generation is read again. Another process's change is seen within READ_CACHE_MS.
// A load in flight is shared by the requests that ask meanwhile; a failed load is not kept. In the last fifth of its
// life, a hit starts the next load in the background and is answered at once: under steady use no request waits for
// a reload (they were the p99 of analytics reads), a hot key is read ~1.25 times a second rather than twice (half its
// life was too early: 200 hot customers' entitlements kept Postgres busy), and nothing answered is older than READ_CACHE_MS.

/** How long another process's change may stay unseen (docs/decisions.md). */
export const READ_CACHE_MS = 1000
const MAX_ENTRIES = 10_000
/** From this age on a hit also reloads in the background (a load takes milliseconds; this leaves 200 ms). */
const REFRESH_AT_MS = READ_CACHE_MS * 0.8

let generation = 0

/** A write committed in this process: every cached read is read again from now on. */
export function writeCommitted(): void {
  generation++
}

interface Entry<V> {
  at: number
  generation: number
  value: Promise<V>
  refreshing?: boolean
}

export class ReadCache<V> {
  private readonly entries = new Map<string, Entry<V>>()

  /** The value of `key` read at most READ_CACHE_MS before `now` and after this process's last write, else `load()`'s. */
  read(key: string, now: Date, load: () => Promise<V>): Promise<V> {
    const t = now.getTime()
    const hit = this.entries.get(key)
    // A clock set back (tests move theirs) reads again rather than trust an entry from its future.
    if (hit && hit.generation === generation && t >= hit.at && t - hit.at < READ_CACHE_MS) {
      if (t - hit.at >= REFRESH_AT_MS && !hit.refreshing) {
        hit.refreshing = true
        const next: Entry<V> = { at: t, generation, value: load() }
        next.value.then(
          () => this.entries.get(key) === hit && this.keep(key, next),
          () => (hit.refreshing = false),
        )
      }
      return hit.value
    }
    const entry: Entry<V> = { at: t, generation, value: load() }
    this.keep(key, entry)
    entry.value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key)
    })
    return entry.value
  }

  private keep(key: string, entry: Entry<V>): void {
    this.entries.delete(key)
    this.entries.set(key, entry)
    // Oldest first (a Map keeps insertion order, and a reload re-inserts).
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!)
  }
}
