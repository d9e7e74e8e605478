// Intake: validate every event, normalise it, hand the valid ones to the sink and answer only once the
// sink says they are durable. Tenant and environment come from the key, never from the body.
import { AppError } from '../core/errors.ts'
import { normalizeEvent, type EventInput, type UsageEvent } from '../core/events.ts'
import { newId } from '../core/ids.ts'
import type { Actor } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { validateBody } from '../api/http/validate.ts'
import { eventSchema } from './schema.ts'
import { sinkOf } from './sink.ts'

export interface BulkResult {
  /** One entry per submitted event, in order; null where the event was invalid. */
  event_ids: (string | null)[]
  failed: { index: number; details: Record<string, unknown> }[]
}

type Checked = { event: UsageEvent } | { details: Record<string, unknown> }

function check(deps: Deps, actor: Actor, raw: unknown, receivedAt: Date): Checked {
  let input: EventInput
  try {
    input = validateBody<EventInput>(eventSchema, raw)
  } catch (err) {
    if (err instanceof AppError) return { details: err.details }
    throw err
  }
  const n = normalizeEvent(input, actor, { receivedAt, maxFutureMs: deps.config.maxEventFutureMs, newId: () => newId('event') })
  return n.ok ? { event: n.event } : { details: n.errors }
}

/** Validates all events before writing any; stores the valid ones. Throws when none is valid. */
export async function ingestEvents(deps: Deps, actor: Actor, raws: unknown[], bytes: number): Promise<BulkResult> {
  const receivedAt = deps.clock.now()
  const checked = raws.map((raw) => check(deps, actor, raw, receivedAt))
  const failed = checked.flatMap((c, index) => ('details' in c ? [{ index, details: c.details }] : []))
  const events = checked.flatMap((c) => ('event' in c ? [c.event] : []))
  if (events.length === 0) {
    const details = Object.fromEntries(failed.flatMap((f) => Object.entries(f.details).map(([k, v]) => [`events[${f.index}].${k}`, v])))
    throw new AppError('validation_error', `no valid event: ${Object.entries(details).map(([k, v]) => `${k} ${String(v)}`).join('; ')}`, details)
  }
  await sinkOf(deps).write(events, bytes)
  return { event_ids: checked.map((c) => ('event' in c ? c.event.id : null)), failed }
}

/** One event: invalid is a 400 naming the field. */
export async function ingestEvent(deps: Deps, actor: Actor, raw: unknown, bytes: number): Promise<{ event_id: string }> {
  const c = check(deps, actor, raw, deps.clock.now())
  if ('details' in c) {
    throw new AppError('validation_error', Object.entries(c.details).map(([k, v]) => `${k} ${String(v)}`).join('; '), c.details)
  }
  await sinkOf(deps).write([c.event], bytes)
  return { event_id: c.event.id }
}
