// Test clocks (sandbox environments): create one at a time of your choosing, put customers on it
// (customers' test_clock_id), advance it and every scheduled job runs for them as the time passes.
import { AppError, validationError } from '../../core/errors.ts'
import { type ListRequest, type Page, page } from '../../core/list.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { insertRecord, listRecords, requireRecord } from '../../infra/records.ts'
import { findEnvironment } from '../tenancy/environments/service.ts'
import { auditOf, transaction } from '../records/service.ts'
import { runAdvance, type ClockJobs } from './advance.ts'
import * as store from './store.ts'

export type { ClockJobs } from './advance.ts'

/** An advance moves at most this many months at once. */
const MAX_ADVANCE_MONTHS = 24
/** An advance whose process has written nothing for this long died: the clock may be advanced again. */
const STALE_MS = 2 * 60_000

/** A clock as the API answers it: { id, name, frozen_time, status }, and while advancing where to and how far. */
export interface ClockView {
  id: string
  name: string
  frozen_time: Date
  status: store.ClockStatus
  status_details: { advancing?: { target_frozen_time: Date; steps: number; progress_percent: number }; failure_reason?: string }
  metadata: Record<string, string>
  environment_id: string
  created_at: Date
  updated_at: Date
}

function viewOf(row: store.ClockRow): ClockView {
  const details: ClockView['status_details'] = {}
  if (row.clock_status === 'advancing' && row.advance_target && row.advance_started_from) {
    const span = row.advance_target.getTime() - row.advance_started_from.getTime()
    const done = row.frozen_time.getTime() - row.advance_started_from.getTime()
    details.advancing = { target_frozen_time: row.advance_target, steps: row.advance_steps, progress_percent: span > 0 ? Math.floor((100 * done) / span) : 100 }
  }
  if (row.failure_reason) details.failure_reason = row.failure_reason
  const { id, name, frozen_time, clock_status, metadata, environment_id, created_at, updated_at } = row
  return { id, name, frozen_time, status: clock_status, status_details: details, metadata, environment_id, created_at, updated_at }
}

/** Test clocks move time for test customers: a production environment never has one. */
async function requireSandbox(deps: Deps, actor: Actor): Promise<void> {
  const environment = await findEnvironment(deps, actor, actor.environmentId)
  if (environment?.type === 'production') {
    throw new AppError('invalid_operation', 'test clocks exist in sandbox environments only: use a key of a sandbox environment', { environment_id: actor.environmentId })
  }
}

const requireClock = (deps: Deps, actor: Actor, id: string): Promise<store.ClockRow> => requireRecord<store.ClockRow>(deps.sql, store.CLOCKS, actor, id, { published: true })

function instant(value: string, field: string): Date {
  const d = new Date(value)
  if (Number.isNaN(d.getTime())) throw validationError(field, 'must be an RFC 3339 date-time')
  return d
}

export interface CreateClockInput {
  name: string
  frozen_time: string
  metadata?: Record<string, string>
}

export async function createClock(deps: Deps, actor: Actor, input: CreateClockInput): Promise<ClockView> {
  await requireSandbox(deps, actor)
  const frozen_time = instant(input.frozen_time, 'frozen_time')
  const row = await transaction(deps, (tx) => insertRecord<store.ClockRow>(tx, store.CLOCKS, actor, auditOf(deps, actor), { name: input.name, frozen_time, metadata: input.metadata ?? {} }))
  return viewOf(row)
}

// Operations on one clock need no sandbox check: a production environment has no clock to find (404).

export async function getClock(deps: Deps, actor: Actor, id: string): Promise<ClockView> {
  return viewOf(await requireClock(deps, actor, id))
}

export async function listClocks(deps: Deps, actor: Actor, { params }: ListRequest): Promise<Page<ClockView>> {
  await requireSandbox(deps, actor)
  const { rows, total } = await listRecords<store.ClockRow>(deps.sql, store.CLOCKS, actor, params, [])
  return page(rows.map(viewOf), total, params)
}

/**
 * Starts moving the clock forward to `frozen_time` (at most MAX_ADVANCE_MONTHS ahead) and answers at once,
 * `advancing`; GET shows the progress, `ready` when done. The jobs run in this process.
 */
export async function advanceClock(deps: Deps, actor: Actor, id: string, input: { frozen_time: string }, jobs: ClockJobs): Promise<ClockView> {
  const target = instant(input.frozen_time, 'frozen_time')
  const clock = await requireClock(deps, actor, id)
  if (!(target > clock.frozen_time)) throw validationError('frozen_time', `must be after the clock's frozen_time ${clock.frozen_time.toISOString()} (clocks move forward only)`)
  const limit = new Date(clock.frozen_time)
  limit.setUTCMonth(limit.getUTCMonth() + MAX_ADVANCE_MONTHS)
  if (target > limit) throw validationError('frozen_time', `must be at most two years after the clock's frozen_time (${limit.toISOString()}); advance in several calls`)
  const taken = await transaction(deps, (tx) => store.beginAdvance(tx, actor, id, target, STALE_MS, actor.keyId))
  if (!taken) throw new AppError('invalid_operation', 'the test clock is advancing: wait until its status is ready', { id, status: 'advancing' })
  runAdvance(deps, taken, target, jobs).catch((err) => deps.logger.error({ err, test_clock_id: id }, 'test clock advance could not record its outcome'))
  return viewOf(taken)
}

/** Deletes the clock, its customers and everything of theirs for good (no soft-deleted records stay). */
export async function deleteClock(deps: Deps, actor: Actor, id: string): Promise<void> {
  const clock = await requireClock(deps, actor, id)
  if (clock.clock_status === 'advancing' && clock.updated_at.getTime() > Date.now() - STALE_MS) {
    throw new AppError('invalid_operation', 'the test clock is advancing: delete it once its status is ready', { id, status: 'advancing' })
  }
  await transaction(deps, (tx) => store.deleteClockAndCustomers(tx, id))
}
