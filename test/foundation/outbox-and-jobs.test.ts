import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../../core/errors.ts'
import { recordEvent } from '../../infra/outbox.ts'
import { runJob, type Job } from '../../infra/scheduler.ts'
import { startHarness, type Harness } from '../harness.ts'

let h: Harness
beforeAll(async () => {
  h = await startHarness()
})
afterAll(() => h?.stop())

const scope = () => ({ tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production })

describe('outbox', () => {
  it('records an event exactly when the change it announces commits', async () => {
    const { sql } = h.running.deps
    await sql.begin(async (tx) => {
      await recordEvent(tx, scope(), { eventType: 'customer.created', entityType: 'customer', entityId: 'cus_1', payload: { customer: { id: 'cus_1' } } })
    })
    await sql
      .begin(async (tx) => {
        await recordEvent(tx, scope(), { eventType: 'customer.created', entityType: 'customer', entityId: 'cus_2', payload: {} })
        throw new Error('the change failed')
      })
      .catch(() => {})
    const rows = await sql`SELECT entity_id, event_type, payload, delivery_status FROM webhook_events
      WHERE tenant_id = ${h.tenant.tenantId} ORDER BY created_at`
    expect(rows.map((r) => r.entity_id)).toEqual(['cus_1'])
    expect(rows[0].payload).toEqual({ event_type: 'customer.created', customer: { id: 'cus_1' } })
    expect(rows[0].delivery_status).toBe('pending')
  })
})

describe('scheduled jobs', () => {
  it('runs a job once at a time across callers and reports progress', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const seen: string[] = []
    const job: Job = {
      name: `test-job-${process.pid}`,
      schedule: '0 0 1 1 *',
      leaseMs: 60_000,
      run: async (_deps, progress) => {
        progress(1, 2)
        await gate
        progress(2, 2)
        return { done: 2 }
      },
    }
    const first = runJob(h.running.deps, job, (done, total) => seen.push(`${done}/${total}`))
    await new Promise((r) => setTimeout(r, 200))
    const second = await runJob(h.running.deps, job).catch((e: unknown) => e)
    expect(second).toBeInstanceOf(AppError)
    expect((second as AppError).code).toBe('invalid_operation')
    release()
    expect(await first).toEqual({ done: 2 })
    expect(seen).toEqual(['1/2', '2/2'])
    // the lease is free again once the run ended
    release()
    expect(await runJob(h.running.deps, job)).toEqual({ done: 2 })
  })
})
