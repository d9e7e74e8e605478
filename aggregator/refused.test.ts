// An event ClickHouse refuses: a `source` holding a lone UTF-16 surrogate ("\ud800"), which JSON allows and
// ClickHouse's JSON reader does not (CANNOT_PARSE_ESCAPE_SEQUENCE). Intake refuses such text now (400), but a
// record can still reach the topic from another producer (an older intake, a replay tool): the tests produce it
// directly. Its batch is split until the event is alone; the event goes to the dead-letter topic and is recorded
// as rejected, the rest of the batch is stored once — also when the split is cut short by a crash and redone.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeEvent, wireEvent, type UsageEvent } from '../core/events.ts'
import type { ClickHouse } from '../infra/clickhouse.ts'
import type { Deps } from '../infra/deps.ts'
import { startHarness, type Harness } from '../test/harness.ts'
import { kafkaBrokers } from '../test/kafka.ts'
import { readyMeter, usage } from '../test/usage-helpers.ts'
import { packRecords, startChunkThread } from './chunks.ts'
import { prepareChunk, storeChunk } from './writer.ts'

const brokers = await kafkaBrokers()
const RANGE = { start_time: '2024-07-01T00:00:00Z', end_time: '2024-08-01T00:00:00Z' }
const BAD = 137
// n = 1, 2, …, 200: the batch sums to 20100; without the refused event, 20100 - 138 = 19962.
const body = (prefix: string) => ({
  events: Array.from({ length: 200 }, (_, i) => ({
    event_id: `${prefix}-${i}`,
    event_name: 'job',
    external_customer_id: 'acme',
    timestamp: new Date(Date.UTC(2024, 6, 1 + (i % 28), i % 24)).toISOString(),
    ...(i === BAD ? { source: 'sdk-\ud800' } : { source: 'sdk' }),
    properties: { n: i + 1 },
  })),
})

/** The batch as intake would have handed it on, in the harness tenant's production environment. */
const usageEvents = (h: Harness, prefix: string): UsageEvent[] =>
  body(prefix).events.map((e) => ({
    tenantId: h.tenant.tenantId,
    environmentId: h.tenant.environments.production,
    id: e.event_id,
    eventName: e.event_name,
    externalCustomerId: e.external_customer_id,
    customerId: '',
    source: e.source,
    timestamp: new Date(e.timestamp),
    receivedAt: new Date(),
    properties: e.properties,
  }))

/** The batch as one record on the topic, keyed as intake keys acme's (so it lands on intake's partition). */
async function produce(h: Harness, topic: string, prefix: string): Promise<void> {
  const events = usageEvents(h, prefix)
  const producer = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING }).producer()
  await producer.connect()
  await producer.send({ topic, acks: -1, messages: [{ key: `${h.tenant.tenantId}:${h.tenant.environments.production}:acme`, value: JSON.stringify(events.map(wireEvent)) }] })
  await producer.disconnect()
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const totals = async (h: Harness, meters: string[]) => Promise.all(meters.map(async (m) => (await usage(h, { meter_id: m, ...RANGE })).value))

/** A harness with a COUNT and a SUM meter of `job` events. */
async function withMeters(options: Parameters<typeof startHarness>[0]): Promise<{ h: Harness; meters: string[] }> {
  const h = await startHarness(options)
  const meters = [
    await readyMeter(h, { name: 'count', event_name: 'job', aggregation: { type: 'COUNT' } }),
    await readyMeter(h, { name: 'sum', event_name: 'job', aggregation: { type: 'SUM', field: 'n' } }),
  ]
  return { h, meters }
}

describe.skipIf(!brokers)('an event ClickHouse refuses, in Kafka mode', () => {
  const topic = `usage-events-refused-${process.pid}-${Date.now()}`
  let h: Harness
  let meters: string[]
  beforeAll(async () => {
    ;({ h, meters } = await withMeters({ roles: ['api', 'ingest', 'aggregator'], env: { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic, METER_BACKFILL_SETTLE_SECONDS: '0' } }))
  })
  afterAll(async () => {
    await h?.stop()
  })

  it('goes to the dead-letter topic and is looked up as rejected; the rest of its batch is counted exactly', async () => {
    // A record before the batch's (same key, same partition), so the batch's record is at offset 1.
    expect((await h.http('POST', '/v1/events', { body: { event_name: 'warmup', external_customer_id: 'acme', timestamp: RANGE.start_time } })).status).toBe(202)
    // Intake itself refuses the event, naming it.
    const refused = await h.http('POST', '/v1/events/bulk', { body: body('r') })
    expect([refused.status, refused.body.details]).toEqual([400, { [`events[${BAD}].source`]: 'must not contain NUL characters or unpaired UTF-16 surrogates' }])
    await produce(h, topic, 'r')
    await until('the refused event is looked up as rejected', async () => (await h.http('GET', `/v1/events/lookup?event_id=r-${BAD}`)).status === 200)
    const lookup = (await h.http('GET', `/v1/events/lookup?event_id=r-${BAD}`)).body
    expect(lookup.status).toBe('rejected')
    expect(lookup.reason).toMatch(/^ClickHouse refused the event: Cannot parse escape sequence.*\(CANNOT_PARSE_ESCAPE_SEQUENCE\)$/)
    expect(lookup.received_at).not.toMatch(/^1970/)
    // Counted as rejected for its customer and event name (the reconciliation report reads this).
    const rs = await h.running.deps.ch.client.query({
      query: "SELECT external_customer_id, event_name, kind, toString(sum(events)) AS n FROM event_drop_counts WHERE tenant_id = {t:String} GROUP BY external_customer_id, event_name, kind",
      query_params: { t: h.tenant.tenantId },
      format: 'JSONEachRow',
    })
    expect(await rs.json()).toEqual([{ external_customer_id: 'acme', event_name: 'job', kind: 'rejected', n: '1' }])
    expect((await h.http('GET', `/v1/events/lookup?event_id=r-${BAD + 1}`)).body.status).toBe('stored')
    await until('the other 199 are counted', async () => (await totals(h, meters))[0] === '199')
    expect(await totals(h, meters)).toEqual(['199', '19962'])

    const kafka = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING })
    const consumer = kafka.consumer({ groupId: `dlq-reader-${process.pid}-${Date.now()}` })
    await consumer.connect()
    await consumer.subscribe({ topic: `${topic}-dlq`, fromBeginning: true })
    const dead: { id: string; reason: string; key: string; offset: string }[] = []
    await consumer.run({
      eachMessage: async ({ message: m }) =>
        void dead.push({ id: JSON.parse(String(m.value)).id, reason: String(m.headers?.reason), key: String(m.key), offset: String(m.headers?.source_offset) }),
    })
    await until('the refused event is read back from the dead-letter topic', async () => dead.length >= 1, 30_000)
    await consumer.disconnect()
    // With the key and offset of the record it came from.
    expect(dead).toEqual([{ id: `r-${BAD}`, reason: lookup.reason, key: expect.stringMatching(/^tenant_\w+:env_\w+:acme$/), offset: '1' }])
  })

  it('counts nothing twice when the same batch is sent again', async () => {
    await produce(h, topic, 'r')
    await until('the resent copies are dropped', async () => (await h.http('GET', `/v1/events/lookup?event_id=r-${BAD + 1}`)).body.status === 'duplicate')
    expect(await totals(h, meters)).toEqual(['199', '19962'])
  })
})

/** The batch stored as direct mode's inserter stores a range of its log: one chunk on a decode thread, one token. */
async function storeBatch(deps: Deps, events: UsageEvent[], token: string) {
  const policy = { attempts: 1, baseMs: 0, maxMs: 0 }
  const thread = startChunkThread()
  try {
    const fetch = await thread.calls.fetch(...packRecords(events.map((e) => Buffer.from(encodeEvent(e)))), Number.MAX_SAFE_INTEGER)
    const c = (await thread.calls.next(fetch))!
    return await storeChunk(deps, thread.calls, c.id, await prepareChunk(deps, thread.calls, c, policy), token, 'direct', policy)
  } finally {
    await thread.close()
  }
}

describe('an event ClickHouse refuses, in direct mode', () => {
  let h: Harness
  let meters: string[]
  beforeAll(async () => {
    ;({ h, meters } = await withMeters({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } }))
  })
  afterAll(async () => {
    await h?.stop()
  })

  it('is rejected, and a split cut short by a crash stores the rest once when redone', async () => {
    const { deps } = h.running
    const events = usageEvents(h, 'd')
    // The process dies at its third insert: the whole batch (refused), its first half (stored), then
    // the second half.
    let inserts = 0
    const dying: ClickHouse = { ...deps.ch, insertRaw: async (insert) => (++inserts === 3 ? Promise.reject(new Error('process died')) : deps.ch.insertRaw(insert)) }
    await expect(storeBatch({ ...deps, ch: dying }, events, 'log:crash')).rejects.toThrow('process died')
    expect(await totals(h, meters)).toEqual(['100', '5050'])

    // Read again after the restart: the first half is found stored as the same records (replayed, not duplicates: the
    // client sent them once), the rest is split and stored.
    const result = await storeBatch(deps, events, 'log:crash')
    expect(result).toMatchObject({ stored: 99, duplicates: 0, replayed: 100, rejected: 1 })
    expect(result.refused.map((r) => r.event.id)).toEqual([`d-${BAD}`])
    expect(await totals(h, meters)).toEqual(['199', '19962'])
    expect((await h.http('GET', `/v1/events/lookup?event_id=d-${BAD}`)).body).toMatchObject({ status: 'rejected', reason: result.refused[0].reason })
  })
})
