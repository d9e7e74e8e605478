// Intake: validate every event, normalise it, hand the valid ones to the sink and answer only once the
// sink says they are durable. Tenant and environment come from the key, never from the body.
import { randomInt } from 'node:crypto'
import { AppError } from '../core/errors.ts'
import { normalizeEvent, type EventInput, type NormalizeOptions, type UsageEvent } from '../core/events.ts'
import { newId } from '../core/ids.ts'
import type { Actor } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { validateBody } from '../core/validate.ts'
import { clockedCustomers } from '../domains/customers/reach.ts'
import { eventSchema, plainEvent } from './schema.ts'
import { sinkOf } from './sink.ts'

export interface BulkResult {
  /** One entry per submitted event, in order; null where the event was invalid. */
  event_ids: (string | null)[]
  failed: { index: number; details: Record<string, unknown> }[]
}

type Checked = { event: UsageEvent } | { details: Record<string, unknown> }

const eventId = (): string => newId('event')

function check(raw: unknown, actor: Actor, opts: NormalizeOptions): Checked {
  let input: EventInput
  // The common shape skips ajv (a fraction of its cost); any other event gets ajv's verdict and error details.
  if (plainEvent(raw)) input = raw
  else {
    try {
      input = validateBody<EventInput>(eventSchema, raw)
    } catch (err) {
      if (err instanceof AppError) return { details: err.details }
      throw err
    }
  }
  const n = normalizeEvent(input, actor, opts)
  return n.ok ? { event: n.event } : { details: n.errors }
}

/**
 * A request's options: its reception instant, and its receipt (UsageEvent.receipt), random so that two ingest processes
 * receiving copies of an event in the same millisecond never give them the same one; and the times of the test clocks
 * the environment's customers live on.
 */
async function optionsOf(deps: Deps, actor: Actor): Promise<NormalizeOptions> {
  const clocked = await clockedCustomers(deps, actor)
  const opts: NormalizeOptions = { receivedAt: deps.clock.now(), receipt: randomInt(1, 2 ** 48), maxFutureMs: deps.config.maxEventFutureMs, newId: eventId }
  // Most environments have no customer on a test clock: their events skip the lookup.
  return clocked.size > 0 ? { ...opts, clockTimes: clocked } : opts
}

/** Hands events to the sink; counted accepted once durable, unavailable when the sink refuses them all (503). */
async function stored(deps: Deps, events: UsageEvent[], bytes: number): Promise<void> {
  try {
    await sinkOf(deps).write(events, bytes)
  } catch (err) {
    deps.metrics.intakeEvents.inc({ outcome: 'unavailable' }, events.length)
    throw err
  }
  deps.metrics.intakeEvents.inc({ outcome: 'accepted' }, events.length)
}

/** Validates all events before writing any; stores the valid ones. Throws when none is valid. */
export async function ingestEvents(deps: Deps, actor: Actor, raws: unknown[], bytes: number): Promise<BulkResult> {
  const opts = await optionsOf(deps, actor)
  const events: UsageEvent[] = []
  const eventIds: (string | null)[] = []
  const failed: BulkResult['failed'] = []
  for (let index = 0; index < raws.length; index++) {
    const c = check(raws[index], actor, opts)
    if ('event' in c) {
      events.push(c.event)
      eventIds.push(c.event.id)
    } else {
      failed.push({ index, details: c.details })
      eventIds.push(null)
    }
  }
  if (failed.length > 0) deps.metrics.intakeEvents.inc({ outcome: 'invalid' }, failed.length)
  if (events.length === 0) {
    const details = Object.fromEntries(failed.flatMap((f) => Object.entries(f.details).map(([k, v]) => [`events[${f.index}].${k}`, v])))
    throw new AppError('validation_error', `no valid event: ${Object.entries(details).map(([k, v]) => `${k} ${String(v)}`).join('; ')}`, details)
  }
  await stored(deps, events, bytes)
  return { event_ids: eventIds, failed }
}

/** One event: invalid is a 400 naming the field. */
export async function ingestEvent(deps: Deps, actor: Actor, raw: unknown, bytes: number): Promise<{ event_id: string }> {
  const c = check(raw, actor, await optionsOf(deps, actor))
  if ('details' in c) {
    deps.metrics.intakeEvents.inc({ outcome: 'invalid' })
    throw new AppError('validation_error', Object.entries(c.details).map(([k, v]) => `${k} ${String(v)}`).join('; '), c.details)
  }
  await stored(deps, [c.event], bytes)
  return { event_id: c.event.id }
}
