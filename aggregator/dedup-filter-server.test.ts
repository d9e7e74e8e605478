// On a ClickHouse server other processes insert too: a process that held a partition before may have died with an
// insert still running there. A filter loaded for a partition first waits for every insert into event_batches the
// server began before it (aggregator/dedup-filter.ts), however long it runs, so the filter holds its ids; a process
// stopping meanwhile ends that wait at once. Server path only (the clickhouse-http project, in CI): on chDB the
// process's own inserts are all there are.
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRoles, type Running } from '../roles.ts'
import { testConfig } from '../test/harness.ts'
import { dedupFilter } from './dedup-filter.ts'
import { lookupOf } from './store.ts'

const config = testConfig({ KAFKA_BROKERS: '' })
let running: Running
beforeAll(async () => {
  if (process.env.CLICKHOUSE_URL) running = await startRoles(config, ['api'])
})
afterAll(async () => {
  await running?.stop()
  rmSync(config.dataDir, { recursive: true, force: true })
})

const scope = { tenantId: 'ten_server_fill', environmentId: 'env_server_fill' }

async function count(query: string): Promise<number> {
  return Number((await (await running.deps.ch.client.query({ query, format: 'JSONEachRow' })).json<{ n: string }>())[0].n)
}

/**
 * An insert into event_batches of `rows` stored ids `<prefix>-<n>` that lasts about `seconds` (a row a block, each
 * block sleeping), as a slow insert of another process would; resolves when the server has begun it.
 */
async function slowInsert(prefix: string, rows: number, seconds: number): Promise<{ ended: Promise<number> }> {
  const ended = running.deps.ch.client
    .command({
      query: `INSERT INTO event_batches (kind, tenant_id, environment_id, id, external_customer_id, customer_id, event_name, source,
          timestamp, received_at, properties, reason, expires_at, meter_ids, revisions, meter_values, group_values, unique_values)
        SELECT 'stored', '${scope.tenantId}', '${scope.environmentId}', concat('${prefix}-', toString(number)), 'c', '', 'call', '',
          now64(3), now64(3), '{}', '', now() + INTERVAL 35 DAY, [], [], [], [], []
        FROM numbers(${rows}) WHERE sleepEachRow(${seconds / rows}) = 0`,
      clickhouse_settings: { max_block_size: '1', min_insert_block_size_rows: '1', min_insert_block_size_bytes: '1' },
    })
    .then(() => performance.now())
  while ((await count(`SELECT count() AS n FROM system.processes WHERE query_kind = 'Insert' AND positionCaseInsensitive(query, '${prefix}-') > 0`)) === 0) {
    await new Promise((r) => setTimeout(r, 50))
  }
  return { ended }
}

describe.skipIf(!process.env.CLICKHOUSE_URL)('dedup filter on a ClickHouse server', () => {
  const direct = { name: 'server-barrier', partitions: async () => 1 }

  it("is loaded only after an insert begun before it has ended: it holds every id of a dead owner's last insert", async () => {
    const insert = await slowInsert('slow', 6, 6)
    const filter = dedupFilter(running.deps, direct)
    await filter.assign([0])
    const ids = Array.from({ length: 6 }, (_, i) => ({ ...scope, id: `slow-${i}` }))
    const stored = await filter.of(0).stored(lookupOf(ids))
    const loaded = performance.now()
    expect(await insert.ended).toBeLessThanOrEqual(loaded)
    expect(stored.map(([, , id]) => id).sort()).toEqual(ids.map((k) => k.id).sort())
    await filter.stop()
  }, 60_000)

  it("stops at once while a load waits for other processes' inserts", async () => {
    const insert = await slowInsert('long', 20, 20)
    const filter = dedupFilter(running.deps, { ...direct, name: 'server-stop' })
    await filter.assign([0])
    const t = performance.now()
    await filter.stop()
    expect(performance.now() - t).toBeLessThan(10_000)
    expect(filter.held()).toEqual([expect.objectContaining({ state: 'failed' })])
    await insert.ended
  }, 60_000)
})
