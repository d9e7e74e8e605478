// Usage corrections (docs/usage.md, "Corrections"): cancel or amend stored events by id, each item answered on its own.
// A correction is recorded in Postgres first (pending), then written to ClickHouse — cancel rows of sign -1 that the
// rollups sum, and an amend's corrected event under a new id — and marked applied. A request that stops in between
// leaves it pending: the same item sent again, or the usage-corrections job, finishes it; what already landed in
// ClickHouse is found there (event_cancellations, event_ids) and not written twice.
import { createHash } from 'node:crypto'
import { AppError, notFound } from '../../../core/errors.ts'
import { correctable, correctionKey, nextStep, type CorrectionItem } from '../../../core/corrections.ts'
import { normalizeEvent, wireEvent, type EventInput, type UsageEvent } from '../../../core/events.ts'
import { newId } from '../../../core/ids.ts'
import { resolveEvent, type UsageRow } from '../../../core/meters.ts'
import { page, type Page } from '../../../core/list.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { chDateTime, fromChDateTime } from '../../../infra/ch-literals.ts'
import { writeCommitted } from '../../../infra/read-cache.ts'
import { metersByIds, resolutionRules, scopeKey } from '../../catalog/meters/service.ts'
import * as store from './store.ts'

export type { CorrectionItem }

/** A correction as the API shows it. */
export interface CorrectionView {
  id: string
  event_id: string
  action: 'cancel' | 'amend'
  reason: string | null
  /** The stored event whose usage it took back: the original, or the copy an earlier amend stored. */
  cancelled_event_id: string
  /** amend: the id the corrected event is stored under. */
  replacement_event_id: string | null
  replacement_event: Record<string, unknown> | null
  external_customer_id: string
  event_name: string
  event_timestamp: string
  status: 'pending' | 'applied'
  created_by: string | null
  created_at: string
  applied_at: string | null
  environment_id: string
}

const view = (r: store.CorrectionRow): CorrectionView => ({
  id: r.id,
  event_id: r.event_id,
  action: r.action,
  reason: r.reason,
  cancelled_event_id: r.cancelled_id,
  replacement_event_id: r.replacement_id,
  replacement_event: r.replacement,
  external_customer_id: r.external_customer_id,
  event_name: r.event_name,
  event_timestamp: r.event_timestamp.toISOString(),
  status: r.status,
  created_by: r.created_by,
  created_at: r.created_at.toISOString(),
  applied_at: r.applied_at?.toISOString() ?? null,
  environment_id: r.environment_id,
})

/** One item's outcome: applied (201), unchanged (200: the same item was applied before), or failed with its error. */
interface ItemResult {
  index: number
  event_id: string
  status: 'applied' | 'unchanged' | 'failed'
  http_status_code: number
  correction?: CorrectionView
  error?: ReturnType<AppError['toBody']>
}

export interface CorrectionsResult {
  items: ItemResult[]
  applied: number
  unchanged: number
  failed: number
}

const digest = (parts: string[]): string => createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32)

/** The event a stored amend carries (its wire form, core/events wireEvent), as the batch insert takes it. */
function replacementEvent(r: store.CorrectionRow): UsageEvent {
  const w = r.replacement as { id: string; event_name: string; external_customer_id: string; customer_id: string; source: string; timestamp: string; received_at: string; properties: Record<string, unknown> }
  return {
    id: w.id,
    tenantId: r.tenant_id,
    environmentId: r.environment_id,
    eventName: w.event_name,
    externalCustomerId: w.external_customer_id,
    customerId: w.customer_id,
    source: w.source,
    timestamp: new Date(w.timestamp),
    receivedAt: new Date(w.received_at),
    properties: w.properties,
  }
}

/** Items grouped by a key, in first-seen order (Map.groupBy arrives with Node 21). */
function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const t of items) out.set(key(t), [...(out.get(key(t)) ?? []), t])
  return out
}

/** What a request already read of the events it corrects, for `complete` not to read it again. */
interface Read {
  keys: Map<string, store.StoredKey>
  usage: Map<string, store.StoredUsage>
}

/**
 * Writes to ClickHouse what pending corrections have not written yet and marks them applied: the cancel rows of the
 * events they cancel and the events amends store. Safe to run again at any point: what landed is looked up first, and
 * a retried insert carries the same deduplication token.
 */
async function complete(deps: Deps, rows: store.CorrectionRow[], read?: Read): Promise<void> {
  const pending = rows.filter((r) => r.status === 'pending')
  if (pending.length === 0) return
  const token = `corrections/${digest(pending.map((r) => r.id).sort())}`
  const cancellations: store.Cancellation[] = []
  const replacements: { event: UsageEvent; rows: UsageRow[] }[] = []
  for (const group of groupBy(pending, (r) => scopeKey(r.tenant_id, r.environment_id)).values()) {
    const scope = { tenantId: group[0].tenant_id, environmentId: group[0].environment_id }
    const cancelled = await store.landed(deps.ch, 'event_cancellations', scope, group.map((r) => r.cancelled_id))
    const toCancel = group.filter((r) => !cancelled.has(r.cancelled_id))
    const keys = read?.keys ?? (await store.storedKeys(deps.ch, scope, toCancel.map((r) => r.cancelled_id)))
    const usage = read?.usage ?? (await store.storedUsage(deps.ch, scope, [...keys.values()]))
    for (const r of toCancel) {
      // A key gone since the correction was recorded (past the dedup window): the record tells where its rows are.
      const key = keys.get(r.cancelled_id) ?? { event_id: r.cancelled_id, external_customer_id: r.external_customer_id, event_name: r.event_name, timestamp: chDateTime(r.event_timestamp), expires_at: '' }
      cancellations.push({ scope, key, usage: usage.get(r.cancelled_id) ?? { source: '', rows: [] }, correctionId: r.id })
    }
    const amends = group.filter((r) => r.replacement_id !== null)
    const stored = await store.landed(deps.ch, 'event_ids', scope, amends.map((r) => r.replacement_id!))
    const toStore = amends.filter((r) => !stored.has(r.replacement_id!)).map(replacementEvent)
    if (toStore.length === 0) continue
    const meters = (await resolutionRules(deps, [scope])).get(scopeKey(scope.tenantId, scope.environmentId)) ?? []
    for (const event of toStore) replacements.push({ event, rows: resolveEvent(meters, event).rows })
  }
  await store.insertCancellations(deps.ch, cancellations, `${token}/cancel`)
  await store.insertReplacements(deps.ch, replacements, new Date(deps.clock.now().getTime() + deps.config.dedupWindowDays * 86_400_000), `${token}/amend`)
  await store.markApplied(deps.sql, pending.map((r) => r.id), deps.clock.now())
  for (const r of pending) {
    r.status = 'applied'
    r.applied_at = deps.clock.now()
  }
  // Usage moved: real-time balances cached in this process are read again.
  writeCommitted()
}

/** A candidate item: its index, item, digest, and (once planned) the correction to record. */
interface Planned {
  index: number
  item: CorrectionItem
  key: string
  sequence: number
  cancelledId: string
  replacement?: UsageEvent
}

const failure = (index: number, eventId: string, err: AppError): ItemResult => ({ index, event_id: eventId, status: 'failed', http_status_code: err.status, error: err.toBody() })

/** The amend's corrected event, normalized as intake would, under a new id; or the fields it gets wrong. */
function amended(deps: Deps, scope: Scope, item: CorrectionItem): UsageEvent | AppError {
  const input = item.event as Record<string, unknown> & { event_id?: string }
  if (input.event_id !== undefined && input.event_id !== item.event_id) {
    return new AppError('validation_error', `event.event_id ${input.event_id} is not the corrected event ${item.event_id}; leave it out or repeat it`, { 'event.event_id': 'must equal event_id' })
  }
  const n = normalizeEvent({ ...input, event_id: undefined } as unknown as EventInput, scope, { receivedAt: deps.clock.now(), maxFutureMs: deps.config.maxEventFutureMs, newId: () => newId('event') })
  if (!n.ok) return new AppError('validation_error', Object.entries(n.errors).map(([k, v]) => `event.${k} ${v}`).join('; '), Object.fromEntries(Object.entries(n.errors).map(([k, v]) => [`event.${k}`, v])))
  return n.event
}

/**
 * Applies up to 1000 cancel and amend items. Items are independent: each is applied, found already applied, or
 * refused with its own error (unknown or expired event, an event already cancelled, one feeding a meter whose
 * aggregation a cancellation cannot take back); a refused item changes nothing.
 */
export async function applyCorrections(deps: Deps, actor: Actor, items: CorrectionItem[]): Promise<CorrectionsResult> {
  const scope: Scope = { tenantId: actor.tenantId, environmentId: actor.environmentId }
  const results: ItemResult[] = []
  const ids = [...new Set(items.map((i) => i.event_id))]
  const chains = groupBy(await store.chainsOf(deps.sql, scope, ids), (r) => r.event_id)
  // Corrections an earlier request left pending are finished first: the chain below then reads what ClickHouse holds.
  await complete(deps, [...chains.values()].flat())
  const replacements = new Map((await store.replacementsAmong(deps.sql, scope, ids)).map((r) => [r.replacement_id, r.event_id]))
  const seen = new Set<string>()
  const planned: Planned[] = []
  items.forEach((item, index) => {
    const chain = chains.get(item.event_id) ?? []
    const key = correctionKey(item)
    const step = nextStep(item.event_id, chain, key)
    if (step.kind === 'replay') {
      results.push({ index, event_id: item.event_id, status: 'unchanged', http_status_code: 200, correction: view(step.link as store.CorrectionRow) })
      return
    }
    const fail = (err: AppError) => results.push(failure(index, item.event_id, err))
    if (seen.has(item.event_id)) return fail(new AppError('already_exists', `event ${item.event_id} is corrected by an earlier item of this request`, { event_id: item.event_id }))
    seen.add(item.event_id)
    const original = replacements.get(item.event_id)
    if (original !== undefined) return fail(new AppError('invalid_operation', `event ${item.event_id} is the corrected copy of event ${original}: correct ${original} instead`, { event_id: item.event_id, original_event_id: original }))
    if (step.kind === 'refused') return fail(new AppError('already_exists', step.message, { event_id: item.event_id }))
    if ((item.action === 'amend') !== (item.event !== undefined)) {
      return fail(new AppError('validation_error', item.action === 'amend' ? `item ${index} (amend of ${item.event_id}) needs the corrected event` : `item ${index} (cancel of ${item.event_id}) takes no event`, { [`items[${index}].event`]: item.action === 'amend' ? 'is required for amend' : 'is only for amend' }))
    }
    const replacement = item.action === 'amend' ? amended(deps, scope, item) : undefined
    if (replacement instanceof AppError) return fail(replacement)
    planned.push({ index, item, key, sequence: step.sequence, cancelledId: step.cancelledId, replacement })
  })

  const keys = planned.length > 0 ? await store.storedKeys(deps.ch, scope, planned.map((p) => p.cancelledId)) : new Map<string, store.StoredKey>()
  const usage = await store.storedUsage(deps.ch, scope, [...keys.values()])
  const meters = new Map((await metersByIds(deps, scope, [...new Set([...usage.values()].flatMap((u) => u.rows.map((r) => r.meterId)))])).map((m) => [m.id, m]))
  const now = deps.clock.now()
  const recorded: store.CorrectionRow[] = []
  for (const p of planned) {
    const eventId = p.item.event_id
    const key = keys.get(p.cancelledId)
    if (!key) {
      results.push(failure(p.index, eventId, notFound('event', eventId)))
      continue
    }
    if (fromChDateTime(key.expires_at).getTime() <= now.getTime()) {
      results.push(failure(p.index, eventId, new AppError('validation_error', `event ${eventId} is past the dedup window (it ended ${fromChDateTime(key.expires_at).toISOString()}): it can no longer be corrected`, { event_id: eventId })))
      continue
    }
    const blocking = (usage.get(p.cancelledId)?.rows ?? []).map((r) => meters.get(r.meterId)).find((m) => m !== undefined && !correctable(m.aggregation.type))
    if (blocking) {
      results.push(failure(p.index, eventId, new AppError('invalid_operation', `event ${eventId} feeds meter ${blocking.id} (${blocking.name}), aggregated by ${blocking.aggregation.type}: a correction cannot take back its usage`, { event_id: eventId, meter_id: blocking.id, aggregation: blocking.aggregation.type })))
      continue
    }
    const row = await store.insertCorrection(deps.sql, {
      id: newId('corr'),
      tenant_id: scope.tenantId,
      environment_id: scope.environmentId,
      event_id: eventId,
      sequence: p.sequence,
      correction_key: p.key,
      action: p.item.action,
      reason: p.item.reason ?? null,
      cancelled_id: p.cancelledId,
      external_customer_id: key.external_customer_id,
      event_name: key.event_name,
      event_timestamp: fromChDateTime(key.timestamp),
      replacement_id: p.replacement?.id ?? null,
      replacement: p.replacement ? (wireEvent(p.replacement) as Record<string, unknown>) : null,
      created_by: actor.keyId,
      created_at: now,
    })
    if (row) {
      recorded.push(row)
      results.push({ index: p.index, event_id: eventId, status: 'applied', http_status_code: 201, correction: view(row) })
      continue
    }
    // Another request recorded a correction of this event in between: the same item (unchanged) or another one.
    const same = (await store.chainsOf(deps.sql, scope, [eventId])).find((r) => r.correction_key === p.key)
    results.push(same ? { index: p.index, event_id: eventId, status: 'unchanged', http_status_code: 200, correction: view(same) } : failure(p.index, eventId, new AppError('version_conflict', `event ${eventId} was corrected by another request meanwhile; read GET /v1/events/corrections and send again`, { event_id: eventId })))
  }
  try {
    await complete(deps, recorded, { keys, usage })
  } catch (err) {
    deps.logger.warn({ err }, 'usage corrections recorded but not yet written to ClickHouse')
    throw new AppError('service_unavailable', 'the corrections are recorded but their usage is not written yet; send the same request again to finish them (nothing is applied twice)', {}, { retryAfter: 1 })
  }
  // Shown as they are now: applied once written.
  for (const r of results) {
    const row = r.correction && recorded.find((x) => x.id === r.correction!.id)
    if (row) r.correction = view(row)
  }
  results.sort((a, b) => a.index - b.index)
  const count = (s: ItemResult['status']) => results.filter((r) => r.status === s).length
  return { items: results, applied: count('applied'), unchanged: count('unchanged'), failed: count('failed') }
}

export interface ListCorrectionsQuery {
  external_customer_id?: string
  event_name?: string
  event_id?: string
  action?: 'cancel' | 'amend'
  start_time?: string
  end_time?: string
  limit: number
  offset: number
}

/** Corrections newest first; the time range filters the corrected events' timestamps. */
export async function listCorrections(deps: Deps, scope: Scope, q: ListCorrectionsQuery): Promise<Page<CorrectionView>> {
  const { rows, total } = await store.listCorrections(
    deps.sql,
    scope,
    {
      externalCustomerId: q.external_customer_id,
      eventName: q.event_name,
      eventId: q.event_id,
      action: q.action,
      start: q.start_time ? new Date(q.start_time) : undefined,
      end: q.end_time ? new Date(q.end_time) : undefined,
    },
    q.limit,
    q.offset,
  )
  return page(rows.map(view), total, q)
}

/** Corrections left pending at least this long are finished by the job (a live request finishes its own sooner). */
const PENDING_GRACE_MS = 5 * 60_000

/** The usage-corrections job: finishes corrections a stopped request left pending, a page at a time. */
export async function completePendingCorrections(deps: Deps): Promise<{ completed: number }> {
  let completed = 0
  for (;;) {
    const rows = await store.pendingCorrections(deps.sql, new Date(deps.clock.now().getTime() - PENDING_GRACE_MS), 500)
    if (rows.length === 0) return { completed }
    await complete(deps, rows)
    completed += rows.length
  }
}
