// docs/test-clocks.md's walk-through works as written: its shell blocks run, in order, with bash and curl against
// the service, and answer what the page says they answer. Only the address and the (sandbox) key are the test's.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from './harness.ts'

const page = readFileSync(join(import.meta.dirname, '../docs/test-clocks.md'), 'utf8')
const blocks = [...page.slice(page.indexOf('## A walk-through')).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1])

let h: Harness
let key: string
beforeAll(async () => {
  h = await startHarness({ roles: ['api', 'ingest'], env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  key = (await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sandbox', roles: ['admin'], environment_id: h.tenant.environments.sandbox } })).body.api_key
})
afterAll(() => h?.stop())

describe("the test clocks walk-through", () => {
  it('runs as written and answers what it says', async () => {
    expect(blocks).toHaveLength(6)
    const host = new URL(h.baseUrl).host
    const script = ['set -euo pipefail', ...blocks.map((b, i) => `echo '<<<${i}>>>'\n${b}`)]
      .join('\n')
      .replace('export KEY=mb_…', `export KEY=${key}`)
      .replaceAll('localhost:8080', host)
    const { stdout } = await promisify(execFile)('bash', ['-c', script], { timeout: 60_000 })
    const out = Object.fromEntries([...stdout.matchAll(/^<<<(\w+)>>>([\s\S]*?)(?=^<<<|$(?![\s\S]))/gm)].map((m) => [m[1], m[2].trim()]))
    /** The lines a block's comments say it prints (its `# …` lines, less the elided ones). */
    const said = (i: number) => [...blocks[i].matchAll(/^# (.*)$/gm)].map((m) => m[1].replace(/^(\w+): .*$/, '$1')).filter((l) => !l.includes('…'))

    expect(out['1']).toBe('trialing')
    expect(out['2']).toContain('advancing\nactive\n{"event_ids":[')
    expect(out['2'].split('\n').at(-1)).toBe(said(2).at(-1))
    expect(out['3'].split('\n')).toEqual(said(3))
    const hooks = out['4'].split('\n')
    for (const line of said(4)) expect(hooks).toContain(line)
    expect(hooks.length).toBeGreaterThan(said(4).length)
    expect(out['5']).toBe('204\nnot_found')
  })
})
