// On a ClickHouse server a new generation's fill first waits 65 s for other processes' inserts (aggregator/dedup-filter.ts):
// a process stopping meanwhile ends that wait at once instead of holding its shutdown for a minute. Server path only
// (the clickhouse-http project, in CI): on chDB there is no such wait.
import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { startRoles, type Running } from '../roles.ts'
import { testConfig } from '../test/harness.ts'
import { dedupFilter } from './dedup-filter.ts'

const config = testConfig({ KAFKA_BROKERS: '' })
let running: Running | undefined
afterAll(async () => {
  await running?.stop()
  rmSync(config.dataDir, { recursive: true, force: true })
})

describe.skipIf(!process.env.CLICKHOUSE_URL)('dedup filter on a ClickHouse server', () => {
  it("stops at once while its first fill waits for other processes' inserts, and leaves the generation unmarked", async () => {
    running = await startRoles(config, ['api'])
    const { ch } = running.deps
    const filter = dedupFilter(running.deps)
    const maintained = filter.maintain(() => Promise.resolve())
    // The view is made just before the wait.
    const count = async (query: string) => Number((await (await ch.client.query({ query, format: 'JSONEachRow' })).json<{ n: string }>())[0].n)
    while ((await count("SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'event_id_seen_1_from_batches'")) === 0) {
      await new Promise((r) => setTimeout(r, 50))
    }
    const t = performance.now()
    await filter.stop()
    await maintained
    expect(performance.now() - t).toBeLessThan(10_000)
    expect(await count('SELECT count() AS n FROM event_id_seen_generations')).toBe(0)
  })
})
