// The README's five-minute tour works as written: its shell blocks run, in order, with bash and curl against a service
// in direct mode (as `npm start` runs), and answer what the README says they answer. Only the address and the key are
// the test's; between the events and the reads it waits for the new meter's backfill, as the README tells a reader to.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from './harness.ts'

const readme = readFileSync(join(import.meta.dirname, '../README.md'), 'utf8')
const tour = readme.slice(readme.indexOf('## A five-minute tour'), readme.indexOf('## What it guarantees'))
const blocks = [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1])

let h: Harness
beforeAll(async () => {
  h = await startHarness({ roles: ['api', 'ingest'], env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '1' } })
})
afterAll(() => h?.stop())

describe("README's five-minute tour", () => {
  it('runs as written and answers what it says', async () => {
    expect(blocks).toHaveLength(5)
    expect(blocks[0]).toContain('export KEY=mb_…')
    const host = new URL(h.baseUrl).host
    const waitForMeter = `until api localhost:8080/v1/events/usage/meter -d '{"meter_id":"'$METER'","start_time":"2020-01-01T00:00:00Z","end_time":"2100-01-01T00:00:00Z"}' | grep -q '"value"'; do sleep 0.5; done`
    const script = ['set -euo pipefail', ...blocks.slice(0, 4).map((b, i) => `echo '<<<${i}>>>'\n${b}`), waitForMeter, `echo '<<<4>>>'\n${blocks[4]}`, 'echo "<<<ids>>> $SUB"']
      .join('\n')
      .replace('export KEY=mb_…', `export KEY=${h.key}`)
      .replaceAll('localhost:8080', host)
    const { stdout } = await promisify(execFile)('bash', ['-c', script], { timeout: 50_000 })
    const out = Object.fromEntries([...stdout.matchAll(/^<<<(\w+)>>>([\s\S]*?)(?=^<<<|$(?![\s\S]))/gm)].map((m) => [m[1], m[2]]))

    expect(out['0']).toContain('"status":"ok"')
    expect(out.ids.trim()).toMatch(/^sub_/)
    expect(out['3']).toContain('{"event_ids":["req-1","req-2","req-2"],"failed":[]}')
    expect(out['3']).toContain('"status":"duplicate"')
    expect(out['4']).toContain('"type":"COUNT","value":"2"')
    expect(out['4'].trim().split('\n').at(-1)).toBe('49.02')
  })
})
