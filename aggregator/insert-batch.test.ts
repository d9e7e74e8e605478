// A batch is one INSERT and must reach every table as one block: one part per table, which its token covers whole.
// A batch over 10 MiB of text was parsed in segments on several threads, each a block of its own (and ~2 µs of
// CPU more per event on chDB), until input_format_parallel_parsing was turned off for it; read from a file (chDB),
// one over 65,409 rows was cut into blocks of max_block_size rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'
import { batchLine, expiresText, insertBatch } from './store.ts'

let h: Harness
beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '' } })
})
afterAll(() => h?.stop())

async function newParts(): Promise<Record<string, number>> {
  const rs = await h.running.deps.ch.client.query({
    query: "SELECT table, toUInt32(count()) AS n FROM system.parts WHERE database = currentDatabase() AND level = 0 AND table IN ('events', 'meter_usage') GROUP BY table",
    format: 'JSONEachRow',
  })
  return Object.fromEntries((await rs.json<{ table: string; n: number }>()).map((r) => [r.table, r.n]))
}

describe('insertBatch', () => {
  it('writes a batch over 10 MiB and 65,409 rows as one part per table, and a retry of it not at all', async () => {
    const now = new Date()
    const scope = { tenantId: 'ten_big_batch', environmentId: 'env_big_batch' }
    const padding = 'x'.repeat(60)
    const lines: string[] = []
    for (let k = 0; k < 70_000; k++) {
      const event = { id: `big-${k}`, ...scope, eventName: 'big', externalCustomerId: `cust-${k % 100}`, customerId: '', source: '', timestamp: now, receivedAt: now, properties: { tokens: k, padding } }
      lines.push(batchLine({ kind: 'stored', event, rows: [{ meterId: 'mtr_big', revision: 1, value: String(k), groupValue: '', uniqueValue: '' }] }, expiresText(now)))
    }
    const rows = Buffer.from(lines.join('\n'))
    expect(rows.length).toBeGreaterThan(12 * 1024 * 1024)

    const before = await newParts()
    await insertBatch(h.running.deps.ch, rows, 'big-batch')
    await insertBatch(h.running.deps.ch, rows, 'big-batch')
    const after = await newParts()
    expect({ events: after.events - (before.events ?? 0), meter_usage: after.meter_usage - (before.meter_usage ?? 0) }).toEqual({ events: 1, meter_usage: 1 })

    const rs = await h.running.deps.ch.client.query({
      query: "SELECT toString(count()) AS n, toString(sum(value)) AS total FROM meter_usage WHERE tenant_id = 'ten_big_batch' AND meter_id = 'mtr_big'",
      format: 'JSONEachRow',
    })
    expect(await rs.json()).toEqual([{ n: '70000', total: String((69_999 * 70_000) / 2) }])
  })
})
