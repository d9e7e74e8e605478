// A worker process of the crash tests: a script under test/ run with tsx over the database and data directory of
// `h` (PGlite's files, or the DATABASE_URL server), its JSON output parsed; null when the test killed it with
// SIGKILL. `started` hands the process over so a stand-in server can kill it mid-request.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { Harness } from './harness.ts'

const root = join(import.meta.dirname, '..')

export function runWorkerChild<T>(h: Harness, script: string, args: string[], started: (child: ChildProcess) => void, env: Record<string, string> = {}): Promise<T | null> {
  const childEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: h.config.dataDir, LOG_LEVEL: 'silent', CLICKHOUSE_DATABASE: h.config.clickhouseDatabase, ...env }
  for (const name of ['CLICKHOUSE_URL', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD']) if (process.env[name]) childEnv[name] = process.env[name]
  if (h.config.databaseUrl) childEnv.DATABASE_URL = h.config.databaseUrl
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, script), ...args], { cwd: root, env: childEnv })
  started(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (err += d))
  return new Promise((resolve, reject) => {
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(null)
      else if (code === 0) resolve(JSON.parse(out) as T)
      else reject(new Error(`${script} exited with ${code}: ${err}`))
    })
  })
}
