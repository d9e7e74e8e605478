// The layers of docs/architecture.md hold: dependency-cruiser checks .dependency-cruiser.cjs over the
// whole tree (no import cycle, no upward import between domains, no I/O in core/, http/ imported only by
// the program), knip finds no unused file, export or dependency, and both are shown to catch a breach.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const ROOT = resolve(import.meta.dirname, '..')
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name)
const run = promisify(execFile)
const LAYERS = ['cli.ts', 'roles.ts', 'core', 'infra', 'domains', 'http', 'ingest', 'aggregator', 'worker', 'bench', 'test', 'scripts']

interface Violation {
  rule: { name: string }
  from: string
  to: string
  cycle?: { name: string }[]
}

/** dependency-cruiser's violations over `paths`, run in `cwd` with the project's rules. */
async function violations(cwd: string, paths: string[]): Promise<string[]> {
  const { stdout } = await run(bin('depcruise'), [...paths, '--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'], { cwd, maxBuffer: 64 << 20 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
  const { summary } = JSON.parse(stdout) as { summary: { violations: Violation[] } }
  return summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.cycle ? v.cycle.map((c) => c.name).join(' → ') : v.to}`)
}

describe('the layers', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'layers-'))
  afterAll(() => rmSync(scratch, { recursive: true, force: true }))

  it('hold over the whole tree: no cycle, no upward import, no I/O in core, http/ only at the top', async () => {
    expect(await violations(ROOT, LAYERS)).toEqual([])
  })

  it('are enforced: each kind of breach is reported', async () => {
    const files: Record<string, string> = {
      'core/pure.ts': "import { readFileSync } from 'node:fs'\nexport const read = readFileSync\n",
      'domains/customers/service.ts': "import { bill } from '../invoicing/invoices/service.ts'\nexport const owe = bill\n",
      'domains/invoicing/invoices/service.ts': "export const bill = 1\n",
      'domains/catalog/a.ts': "import { b } from './b.ts'\nexport const a = () => b\n",
      'domains/catalog/b.ts': "import { a } from './a.ts'\nexport const b = () => a\n",
      'worker/jobs.ts': "import { app } from '../http/app.ts'\nexport const jobs = app\n",
      'http/app.ts': "export const app = 1\n",
      'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true } }),
    }
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(scratch, path)), { recursive: true })
      writeFileSync(join(scratch, path), text)
    }
    const found = await violations(scratch, ['core', 'domains', 'worker', 'http'])
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^core-no-io: core\/pure\.ts → (node:)?fs$/),
        'domain-order-customers: domains/customers/service.ts → domains/invoicing/invoices/service.ts',
        expect.stringMatching(/^no-circular: domains\/catalog\/(a|b)\.ts → /),
        'only-the-top-imports-http: worker/jobs.ts → http/app.ts',
      ]),
    )
  })

  it('leave no unused file, export or dependency (knip)', async () => {
    const { stdout } = await run(bin('knip'), ['--no-progress', '--reporter', 'compact'], { cwd: ROOT, maxBuffer: 64 << 20 }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: `${err.stdout ?? ''}${err.stderr ?? ''}` }))
    expect(stdout.trim()).toBe('')
  })
})
