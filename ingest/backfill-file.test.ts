// `meterbill backfill`'s file sender against a running service (real intake and storage): batches, refused lines written
// aside, a crash after a batch was stored but before its checkpoint, and the resumed run storing every event once.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'
import { readyMeter, usage } from '../test/usage-helpers.ts'
import { backfillFile, checkpointPath, rejectedPath, type BackfillProgress, type Post } from './backfill-file.ts'

let h: Harness
let meter: string
// Ten days ago: a backfill of last month's usage is the same as far as intake is concerned.
const DAY = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 10 * 86_400_000
const at = (i: number) => new Date(DAY + i * 1000).toISOString()

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '' } })
  meter = await readyMeter(h, { name: 'tokens', event_name: 'llm', aggregation: { type: 'SUM', field: 'tokens' } })
})
afterAll(() => h?.stop())

const post: Post = async (events) => {
  const res = await h.http('POST', '/v1/events/bulk', { body: { events } })
  return { status: res.status, body: res.body }
}

it('sends a file in batches, resumes after a crash from its checkpoint, and stores every event once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'backfill-'))
  const file = join(dir, 'march.jsonl')
  // 250 events of 2 tokens each (every other one without an event_id), a line that is not JSON, an event intake
  // refuses (a blank customer), and a blank line.
  const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ ...(i % 2 === 0 ? { event_id: `m${i}` } : {}), event_name: 'llm', external_customer_id: 'acme', timestamp: at(i), properties: { tokens: 2 } }))
  lines.splice(100, 0, '{not json')
  lines.splice(200, 0, JSON.stringify({ event_name: 'llm', external_customer_id: '  ', timestamp: at(0) }))
  lines.splice(10, 0, '')
  writeFileSync(file, `${lines.join('\n')}\n`)

  // The process dies right after the third batch was stored, before its checkpoint.
  let calls = 0
  const dying: Post = async (events) => {
    const res = await post(events)
    if (++calls === 3) throw new Error('killed')
    return res
  }
  await expect(backfillFile(file, { post: dying, batch: 50, retryDelaysMs: [] })).rejects.toThrow('run the same command again to resume')
  expect(JSON.parse(readFileSync(checkpointPath(file), 'utf8'))).toMatchObject({ sent: 100, line: 101 })

  const progress: BackfillProgress[] = []
  const done = await backfillFile(file, { post, batch: 50, onProgress: (p) => progress.push(p) })
  expect(done).toMatchObject({ sent: 250, rejected: 2, line: 253 })
  expect(progress.at(-1)).toMatchObject({ offset: progress.at(-1)!.size, sent: 250 })
  expect(progress.map((p) => p.sent)).toEqual([150, 199, 249, 250])
  const rejected = readFileSync(rejectedPath(file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { line: number; reason: unknown })
  expect(rejected.map((r) => r.line)).toEqual([102, 202])
  expect(JSON.stringify(rejected[1].reason)).toContain('external_customer_id')

  // 250 events × 2 tokens, the third batch (sent twice) counted once.
  const range = { external_customer_id: 'acme', start_time: new Date(DAY).toISOString(), end_time: new Date(DAY + 86_400_000).toISOString() }
  expect((await usage(h, { meter_id: meter, ...range })).value).toBe('500')

  // A run over a finished file sends nothing; a changed file is not resumed.
  let more = 0
  await backfillFile(file, { post: async (e) => ((more += e.length), post(e)) })
  expect(more).toBe(0)
  writeFileSync(file, 'something else\n')
  await expect(backfillFile(file, { post })).rejects.toThrow(`delete ${checkpointPath(file)} to start over`)
  expect(existsSync(checkpointPath(file))).toBe(true)
})
