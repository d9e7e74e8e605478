// `npm run bench`: runs every bench/*.bench.ts in its own process, one after another (each may
// open chDB, which allows one data directory per process), and prints what each reports.
// Each bench writes its own section of BENCHMARKS.md.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const dir = import.meta.dirname
const only = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()

if (files.length === 0) {
  console.error('no benchmarks found')
  process.exit(1)
}

let failed = 0
for (const file of files) {
  console.error(`\n=== ${file}`)
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit' })
  if (run.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)
