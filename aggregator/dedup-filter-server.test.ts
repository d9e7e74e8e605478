// On a ClickHouse server other processes insert too: a new generation's fill first waits for every insert into
// event_batches that the server began before the generation's view existed (aggregator/dedup-filter.ts), however long
// it runs, so the Set holds its ids; a process stopping meanwhile ends that wait at once. Server path only (the
// clickhouse-http project, in CI): on chDB the process's own inserts are all there are.
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startRoles, type Running } from '../roles.ts'
import { testConfig } from '../test/harness.ts'
import { dedupFilter } from './dedup-filter.ts'

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
  it('fills a new generation only after an insert begun before its view has ended: the Set holds every id of it', async () => {
    const insert = await slowInsert('slow', 6, 6)
    const filter = dedupFilter(running.deps)
    await filter.maintain(() => Promise.resolve())
    const filled = performance.now()
    expect(await insert.ended).toBeLessThanOrEqual(filled)
    expect(await count('SELECT count() AS n FROM event_id_seen_generations')).toBe(1)
    const inSet = await count(`SELECT countIf(sipHash64('${scope.tenantId}', '${scope.environmentId}', concat('slow-', toString(number))) IN event_id_seen_1) AS n FROM numbers(6)`)
    expect(inSet).toBe(6)
    await filter.stop()
  }, 60_000)

  it("stops at once while a fill waits for other processes' inserts, and leaves the generation unmarked", async () => {
    // Generation 1 is filled (above): moving the clock is not needed, a dropped mark makes the next fill due.
    await running.deps.ch.client.command({ query: 'TRUNCATE TABLE event_id_seen_generations' })
    await running.deps.ch.client.command({ query: 'DROP VIEW IF EXISTS event_id_seen_1_from_batches' })
    await running.deps.ch.client.command({ query: 'DROP TABLE IF EXISTS event_id_seen_1' })
    const insert = await slowInsert('long', 20, 20)
    const filter = dedupFilter(running.deps)
    const maintained = filter.maintain(() => Promise.resolve())
    // The view is made just before the wait.
    while ((await count("SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'event_id_seen_1_from_batches'")) === 0) {
      await new Promise((r) => setTimeout(r, 50))
    }
    const t = performance.now()
    await filter.stop()
    await maintained
    expect(performance.now() - t).toBeLessThan(10_000)
    expect(await count('SELECT count() AS n FROM event_id_seen_generations')).toBe(0)
    await insert.ended
  }, 60_000)
})
