// The batch writer, shared by direct mode and the Kafka consumer: drop repeats of an id within the
// batch, look up which ids are already stored (one query), resolve the new events against the meters,
// and store everything with one insert. Flush order and what a failure at each step means:
//   1. lookup   fails → nothing written; the batch is retried whole.
//   2. insert   fails → maybe written; the retry carries the same token, so ClickHouse drops what landed.
//   3. (Kafka) commit fails → the batch is read again; step 1 now finds its ids and stores nothing twice.
import type { UsageEvent } from '../core/events.ts'
import { resolveEvent, type MeterRules } from '../core/meters.ts'
import type { Deps } from '../infra/deps.ts'
import { resolutionRules, scopeKey } from '../api/meters/service.ts'
import { retry, type RetryPolicy } from './retry.ts'
import { insertBatch, keyOf, storedKeys, type Outcome } from './store.ts'

export interface Rejected {
  event: Pick<UsageEvent, 'id' | 'tenantId' | 'environmentId'> & Partial<UsageEvent>
  reason: string
}

export interface BatchResult {
  stored: number
  duplicates: number
  rejected: number
  /** Meter rows not written because the event lacked a usable value: (meter, reason) counts. */
  skippedValues: number
}

async function rulesFor(deps: Deps, events: UsageEvent[]): Promise<Map<string, MeterRules[]>> {
  const scopes = new Map<string, { tenantId: string; environmentId: string }>()
  for (const e of events) scopes.set(scopeKey(e.tenantId, e.environmentId), { tenantId: e.tenantId, environmentId: e.environmentId })
  return resolutionRules(deps, [...scopes.values()])
}

/** Splits a batch into what to store and what repeats an id stored before or earlier in the batch. */
export async function classify(deps: Deps, events: UsageEvent[]): Promise<{ fresh: UsageEvent[]; duplicates: UsageEvent[] }> {
  const seen = new Set<string>()
  const fresh: UsageEvent[] = []
  const duplicates: UsageEvent[] = []
  for (const e of events) {
    const k = keyOf(e)
    if (seen.has(k)) duplicates.push(e)
    else {
      seen.add(k)
      fresh.push(e)
    }
  }
  const stored = await storedKeys(deps.ch, fresh)
  return { fresh: fresh.filter((e) => !stored.has(keyOf(e))), duplicates: duplicates.concat(fresh.filter((e) => stored.has(keyOf(e)))) }
}

/**
 * Writes one batch; `token` names the batch so that a retry of it is deduplicated by ClickHouse. The
 * insert is retried with the very rows of the first attempt: reclassifying after a partial landing would
 * call its own events duplicates and lose their meter rows.
 */
export async function writeBatch(deps: Deps, events: UsageEvent[], rejected: Rejected[], token: string, policy: RetryPolicy): Promise<BatchResult> {
  const { fresh, duplicates } = await retry(() => classify(deps, events), policy)
  const rules = await retry(() => rulesFor(deps, fresh), policy)
  let skippedValues = 0
  const outcomes: Outcome[] = fresh.map((event) => {
    const { rows, skipped } = resolveEvent(rules.get(scopeKey(event.tenantId, event.environmentId)) ?? [], event)
    skippedValues += skipped.length
    return { kind: 'stored', event, rows }
  })
  for (const event of duplicates) outcomes.push({ kind: 'duplicate', event, reason: 'an event with this id is already stored' })
  for (const r of rejected) outcomes.push({ kind: 'rejected', event: r.event, reason: r.reason })
  const dedupUntil = new Date(deps.clock.now().getTime() + deps.config.dedupWindowDays * 86_400_000)
  await retry(() => insertBatch(deps.ch, outcomes, token, dedupUntil), policy)
  return { stored: fresh.length, duplicates: duplicates.length, rejected: rejected.length, skippedValues }
}
