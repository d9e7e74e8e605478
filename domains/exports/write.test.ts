// The export engine on real engines: each entity as CSV and as Parquet, the Parquet files read back with an
// independent reader (hyparquet) and compared, row for row and in sums, with what ClickHouse and Postgres hold.
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { parquetReadObjects } from 'hyparquet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { D } from '../../core/money.ts'
import type { Scope } from '../../core/scope.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { readyMeter, send } from '../../test/usage-helpers.ts'
import { call, newWallet, topUp } from '../../test/wallets.ts'
import { writeExportFile, type ExportSpec } from './write.ts'

let h: Harness
let dir: string
let scope: Scope
let meterId: string
const RANGE = { start_time: '2024-03-01T00:00:00Z', end_time: '2024-03-03T00:00:00Z' }

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
  dir = await mkdtemp(join(tmpdir(), 'exports-'))
  await send(
    h,
    [
      { id: 'a1', at: '2024-03-01T00:10:00.000Z', props: { tokens: 10 } },
      { id: 'a2', at: '2024-03-01T05:00:00.500Z', props: { tokens: 2.5, note: '=1+2' } },
      { id: 'a3', at: '2024-03-02T23:59:59.999Z', props: { tokens: 7 } },
      { id: 'late', at: '2024-03-03T00:00:00.000Z', props: { tokens: 1000 } },
      { id: 'b1', at: '2024-03-01T01:00:00.000Z', customer: 'beta', props: { tokens: 0.25 } },
    ],
    { customer: 'acme', name: 'llm' },
  )
  meterId = await readyMeter(h, { name: 'Tokens', event_name: 'llm', aggregation: { type: 'SUM', field: 'tokens' } })
  await call(h, 'POST', '/v1/features', { name: 'Tokens', type: 'metered', meter_id: meterId }, 201)
})
afterAll(() => h.stop())

const write = (spec: Partial<ExportSpec>, name: string, s: Scope = scope) =>
  writeExportFile(h.running.deps, s, { entity_type: 'events', format: 'csv', ...RANGE, ...spec } as ExportSpec, join(dir, name))

async function parquet(name: string): Promise<Record<string, unknown>[]> {
  const b = readFileSync(join(dir, name))
  return parquetReadObjects({ file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer })
}
const csv = (name: string) => parse(readFileSync(join(dir, name), 'utf8'), { columns: true }) as Record<string, string>[]
const sum = (values: unknown[]) => values.reduce<InstanceType<typeof D>>((t, v) => t.plus(String(v)), new D(0)).toFixed()

describe('events and usage (ClickHouse)', () => {
  it('writes the events of the window as CSV and as Parquet, the same rows', async () => {
    const progress: number[] = []
    const written = await writeExportFile(h.running.deps, scope, { entity_type: 'events', format: 'csv', ...RANGE }, join(dir, 'nested/e.csv'), (n) => progress.push(n))
    expect(written.rows).toBe(4)
    expect(progress.at(-1)).toBe(4)
    const rows = csv('nested/e.csv')
    expect(rows.map((r) => r.event_id).sort()).toEqual(['a1', 'a2', 'a3', 'b1'])
    expect(rows.find((r) => r.event_id === 'a2')!.timestamp).toBe('2024-03-01T05:00:00.500Z')

    expect((await write({ format: 'parquet' }, 'e.parquet')).rows).toBe(4)
    const p = await parquet('e.parquet')
    expect(p.map((r) => r.event_id).sort()).toEqual(['a1', 'a2', 'a3', 'b1'])
    expect((p.find((r) => r.event_id === 'a2')!.timestamp as Date).toISOString()).toBe('2024-03-01T05:00:00.500Z')
    // Parquet holds the text as it is (no spreadsheet guard): the properties' JSON.
    expect(JSON.parse(p.find((r) => r.event_id === 'a2')!.properties as string)).toEqual({ tokens: 2.5, note: '=1+2' })
  })

  it('filters events and sees nothing of another environment', async () => {
    expect((await write({ filters: { external_customer_ids: ['beta'] } }, 'beta.csv')).rows).toBe(1)
    expect((await write({ format: 'parquet' }, 'other.parquet', { ...scope, environmentId: h.tenant.environments.sandbox })).rows).toBe(0)
    expect(await parquet('other.parquet')).toEqual([])
  })

  it('writes metered usage whose values add up to what the usage query answers', async () => {
    const res = await h.http('POST', '/v1/events/usage/meter', { body: { meter_id: meterId, ...RANGE } })
    expect(res.status).toBe(200)
    expect(res.body.value).toBe('19.75')
    await write({ entity_type: 'usage', format: 'parquet' }, 'u.parquet')
    const p = await parquet('u.parquet')
    expect(p).toHaveLength(4)
    expect(sum(p.map((r) => r.value))).toBe('19.75')
    await write({ entity_type: 'usage', format: 'csv', filters: { meter_ids: [meterId], external_customer_ids: ['acme'] } }, 'u.csv')
    expect(sum(csv('u.csv').map((r) => r.value))).toBe('19.5')
  })

  it('writes the analytics export, Parquet with typed usage and event counts', async () => {
    await write({ entity_type: 'analytics', format: 'csv', filters: { window_size: 'DAY' } }, 'a.csv')
    const rows = csv('a.csv')
    expect(sum(rows.map((r) => r.usage))).toBe('19.75')
    expect((await write({ entity_type: 'analytics', format: 'parquet', filters: { window_size: 'DAY' } }, 'a.parquet')).rows).toBe(rows.length)
    const p = await parquet('a.parquet')
    expect(sum(p.map((r) => r.usage))).toBe('19.75')
    expect(p.reduce((t, r) => t + Number(r.event_count), 0)).toBe(4)
  })

  it('leaves out an event cancelled by a correction, as usage reads do (neither it nor its cancel rows)', async () => {
    const corrected = await h.http('POST', '/v1/events/corrections', { body: { items: [{ event_id: 'a2', action: 'cancel', reason: 'sent twice' }] } })
    expect(corrected.status).toBeLessThan(300)
    const res = await h.http('POST', '/v1/events/usage/meter', { body: { meter_id: meterId, ...RANGE } })
    expect(res.body.value).toBe('17.25')
    await write({ entity_type: 'usage', format: 'parquet' }, 'u-corrected.parquet')
    const usage = await parquet('u-corrected.parquet')
    expect(usage.map((r) => r.event_id).sort()).toEqual(['a1', 'a3', 'b1'])
    expect(sum(usage.map((r) => r.value))).toBe('17.25')
    await write({ format: 'csv' }, 'e-corrected.csv')
    expect(csv('e-corrected.csv').map((r) => r.event_id).sort()).toEqual(['a1', 'a3', 'b1'])
  })
})

describe('Postgres entities', () => {
  it('writes wallet transactions as CSV and Parquet, amounts exact', async () => {
    const customer = await call(h, 'POST', '/v1/customers', { external_id: 'wallet-owner', name: 'W' }, 201)
    const wallet = await newWallet(h, customer.id)
    await topUp(h, wallet.id, { amount: '10.125' })
    await topUp(h, wallet.id, { amount: '0.005' })
    const now = h.running.deps.clock.now()
    const window = { start_time: new Date(now.getTime() - 3_600_000).toISOString(), end_time: new Date(now.getTime() + 3_600_000).toISOString() }
    expect((await write({ entity_type: 'wallet_transactions', ...window }, 'w.csv')).rows).toBe(2)
    expect(sum(csv('w.csv').map((r) => r.amount))).toBe('10.13')
    await write({ entity_type: 'wallet_transactions', format: 'parquet', ...window }, 'w.parquet')
    const p = await parquet('w.parquet')
    expect(p.map((r) => r.wallet_id)).toEqual([wallet.id, wallet.id])
    expect(sum(p.map((r) => r.amount))).toBe('10.13')
    expect(p[0].created_at).toBeInstanceOf(Date)
    // Nothing of another customer.
    expect((await write({ entity_type: 'wallet_transactions', ...window, filters: { customer_ids: ['cust_none'] } }, 'none.csv')).rows).toBe(0)
  })
})

describe('bad specs', () => {
  it('refuses before writing anything, naming the field', async () => {
    const cases: [Partial<ExportSpec> | Record<string, unknown>, string][] = [
      [{ entity_type: 'customers' }, 'entity_type'],
      [{ format: 'xlsx' }, 'format'],
      [{ start_time: 'yesterday' }, 'start_time'],
      [{ end_time: RANGE.start_time }, 'end_time'],
      [{ filters: { meter_ids: ['x'] } }, 'filters.meter_ids'],
      [{ filters: { event_names: [] } }, 'filters.event_names'],
      [{ entity_type: 'usage', filters: { meter_ids: ['meter_unknown'] } }, 'filters.meter_ids'],
    ]
    for (const [spec, field] of cases) {
      await expect(write(spec as Partial<ExportSpec>, 'bad/x.csv')).rejects.toMatchObject({ code: 'validation_error', details: { [field]: expect.any(String) } })
    }
    expect(existsSync(join(dir, 'bad'))).toBe(false)
  })
})
