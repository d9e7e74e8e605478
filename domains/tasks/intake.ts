// The port through which imported events enter: the intake of POST /v1/events/bulk, which lives in an entry point
// (ingest/) a domain may not import. The program plugs it in (roles.ts); with nothing plugged in, an event import
// waits rather than store events some other way.
import { serviceUnavailable } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'

/** What intake answers for a list of events: their ids in order (null where invalid) and the invalid ones' fields. */
interface IntakeResult {
  event_ids: (string | null)[]
  failed: { index: number; details: Record<string, unknown> }[]
}

/** Validates every event, stores the valid ones durably; throws validation_error when none is valid. */
export type EventIntake = (deps: Deps, actor: Actor, events: unknown[], bytes: number) => Promise<IntakeResult>

let plugged: EventIntake | undefined

export function plugEventIntake(intake: EventIntake): void {
  plugged = intake
}

export function eventIntake(): EventIntake {
  if (!plugged) throw serviceUnavailable('event intake is not running in this process')
  return plugged
}
