// Shared steps of usage tests: send events (stored when it returns), create a meter and wait until its backfill is done.
import { expect } from 'vitest'
import { eventLogOf } from '../infra/event-log.ts'
import type { Harness } from './harness.ts'

export interface TestEvent {
  id: string
  at: string
  customer?: string
  name?: string
  props?: Record<string, unknown>
}

export async function send(h: Harness, events: TestEvent[], defaults: { customer: string; name: string }): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await h.http('POST', '/v1/events/bulk', {
      body: {
        events: events.slice(i, i + 1000).map((e) => ({
          event_id: e.id,
          timestamp: e.at,
          event_name: e.name ?? defaults.name,
          external_customer_id: e.customer ?? defaults.customer,
          properties: e.props ?? {},
        })),
      },
    })
    expect(res.status, JSON.stringify(res.body)).toBe(202)
    expect(res.body.failed).toEqual([])
  }
  // Direct mode answers after its event log, before the insert: a job run next (not an API read, which waits) must find them stored.
  expect(await eventLogOf(h.running.deps)?.settled(30_000)).not.toBe(false)
}

/**
 * Creates a meter and waits until its backfill made it queryable: up to 60 s, since on the server path the test
 * ClickHouse (one chDB behind the shim) runs the statements of every server-path file at once, and a backfill once
 * took more than 20 s there in CI.
 */
export async function readyMeter(h: Harness, body: Record<string, unknown>): Promise<string> {
  const created = await h.http('POST', '/v1/meters', { body })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.id as string
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const m = await h.http('GET', `/v1/meters/${id}`)
    if (m.body.ready_revision === m.body.revision) return id
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`meter ${id} never finished its backfill`)
}

export async function usage(h: Harness, body: Record<string, unknown>) {
  const res = await h.http('POST', '/v1/events/usage/meter', { body })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body as { value: string; type: string; event_name: string; results: { window_size: string; start: string; end: string; value: string; groups?: Record<string, string> }[] }
}
