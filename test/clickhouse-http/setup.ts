// Global setup of the `clickhouse-http` test project: starts the ClickHouse HTTP shim (server.ts) in a process of
// its own on SHIM_PORT, which that project's CLICKHOUSE_URL names, and stops it after the run.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

export const SHIM_PORT = 18123

export default async function setup(): Promise<() => Promise<void>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meterbill-ch-http-'))
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./server.ts', import.meta.url)), dataDir], {
    env: { ...process.env, PORT: String(SHIM_PORT) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', () => resolve())
    child.once('exit', (code) => reject(new Error(`the ClickHouse HTTP shim exited with ${code} (is port ${SHIM_PORT} taken?)`)))
  })
  return async () => {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    rmSync(dataDir, { recursive: true, force: true })
  }
}
