// The one CLI: `start` runs every role on embedded defaults; `api`, `ingest`, `aggregator`, `worker`
// run one role each; `migrate` applies migrations and exits; `tenant create` adds a tenant; `jobs run`
// runs a scheduled job now; `export` streams a CSV export of a running service to stdout; `backfill` sends a file of
// events to a running service's bulk intake, resumable.
import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from './core/config.ts'
import type { NewTenant } from './domains/tenancy/tenants/service.ts'
import type { Deps } from './infra/deps.ts'
import type { RoleName } from './roles.ts'
import { csvRecordCounter, progressLine as exportProgress } from './core/export-progress.ts'

const USAGE = `usage: meterbill <command>

commands:
  start                 every role in one process (embedded engines unless configured)
  api | ingest | aggregator | worker
                        one role
  migrate               apply migrations and exit
  tenant create --name NAME
                        create a tenant with production and sandbox environments; prints its admin key
  jobs run NAME         run a scheduled job now (billing-run, invoice-overdue, ...) with a progress line;
                        prints its summary as JSON
  export --from TIME --to TIME [--customer ID]... [--window SIZE] [--group-by KEY]... [--raw [--event NAME]...] [--url URL] [--key KEY] > usage.csv
                        a running service's usage as CSV on stdout, progress on stderr: analytics rows
                        (POST /v1/events/analytics/export), or with --raw every stored event (POST /v1/events/export);
                        the key from --key or METERBILL_API_KEY, the service from --url or METERBILL_URL
                        (default http://127.0.0.1:8080)
  backfill FILE.jsonl [--batch N] [--url URL] [--key KEY]
                        send a file of events (one JSON object a line) to a running service's bulk intake, progress
                        on stderr; resumable: a rerun continues from FILE.jsonl.checkpoint, and events resent after a
                        crash are stored once (docs/usage.md, "Backfill"); refused lines go to FILE.jsonl.rejected

configuration is read from the environment: see docs/configuration.md`

const say = (line: string): void => {
  process.stderr.write(`${line}\n`)
}

function printTenant(t: NewTenant, heading: string): void {
  say(heading)
  say(`  tenant:      ${t.tenantId}`)
  say(`  production:  ${t.environments.production}`)
  say(`  sandbox:     ${t.environments.sandbox}`)
  // The key itself goes to stdout, alone on its line, so scripts can capture it.
  say("  the tenant's owner key: admin of production, manages every environment's keys (shown once, store it now):")
  process.stdout.write(`${t.apiKey}\n`)
}

// The service's modules are imported by the commands that run it: `export` and `help` start in a fraction of the time.
const roles = () => import('./roles.ts')

/** The engines opened and migrated, for a command that runs once and exits. */
async function migratedDeps(): Promise<{ deps: Deps; applied: { postgres: string[]; clickhouse: string[] } }> {
  const [{ openDeps }, { migrate }] = await Promise.all([import('./infra/deps.ts'), import('./infra/migrate.ts')])
  const deps = await openDeps(loadConfig())
  try {
    return { deps, applied: await migrate(deps.sql, deps.ch) }
  } catch (err) {
    await deps.close()
    throw err
  }
}

async function serve(names: readonly RoleName[]): Promise<void> {
  const config = loadConfig()
  const running = await (await roles()).startRoles(config, names)
  const { deps } = running
  if (running.bootstrap) printTenant(running.bootstrap, 'first start: created a tenant')
  say(`meterbill ${names.join('+')} running: postgres=${deps.engines.postgres} clickhouse=${deps.engines.clickhouse} kafka=${config.kafkaBrokers ? config.kafkaBrokers.join(',') : 'off (direct mode)'}`)
  if (running.metricsPort !== undefined) say(`metrics: http://${config.metrics!.host}:${running.metricsPort}/metrics`)
  if (running.port !== undefined) say(`listening on http://127.0.0.1:${running.port}  (${names.includes('api') ? 'console: /, ' : ''}health: /v1/health, API docs: /v1/openapi.json)`)

  let stopping = false
  const shutdown = (signal: string): void => {
    if (stopping) return
    stopping = true
    say(`${signal}: stopping`)
    running.stop().then(
      () => process.exit(0),
      (err) => {
        say(`error while stopping: ${(err as Error).message}`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  // A promise nobody awaited that fails (a request's stray work) is logged, never a reason to stop serving.
  process.on('unhandledRejection', (err) => deps.logger.error({ err }, 'unhandled rejection'))
}

async function runMigrate(): Promise<void> {
  const { deps, applied } = await migratedDeps()
  try {
    say(`postgres: ${applied.postgres.length ? applied.postgres.join(', ') : 'up to date'}`)
    say(`clickhouse: ${applied.clickhouse.length ? applied.clickhouse.join(', ') : 'up to date'}`)
  } finally {
    await deps.close()
  }
}

async function runTenant(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { name: { type: 'string' } }, allowPositionals: true })
  if (positionals[0] !== 'create' || !values.name) throw new UsageError('usage: meterbill tenant create --name NAME')
  const { createTenant } = await import('./domains/tenancy/tenants/service.ts')
  const { deps } = await migratedDeps()
  try {
    printTenant(await createTenant(deps, values.name), `created tenant ${values.name}`)
  } finally {
    await deps.close()
  }
}

/** `done/total` as a bar when the total is known, a count otherwise; rewritten in place on stderr. */
function progressLine(done: number, total: number, note = ''): string {
  if (total <= 0) return `${note} ${done}`
  const width = 30
  const filled = Math.round((done / total) * width)
  return `${note} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`
}

async function runJobNow(args: string[]): Promise<void> {
  const [sub, name] = args
  const [{ jobs }, { runJob }] = await Promise.all([import('./worker/jobs.ts'), import('./infra/scheduler.ts')])
  const names = jobs.map((j) => j.name).join(', ')
  const job = jobs.find((j) => j.name === name)
  if (sub !== 'run' || !job) throw new UsageError(`usage: meterbill jobs run NAME   (${names})`)
  const { deps } = await migratedDeps()
  try {
    const summary = await runJob(deps, job, (done, total, note) => process.stderr.write(`\r\x1b[K${progressLine(done, total, note ?? job.name)}`))
    process.stderr.write('\n')
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`)
  } finally {
    await deps.close()
  }
}

const EXPORT_USAGE =
  'usage: meterbill export --from TIME --to TIME [--customer ID]... [--window SIZE] [--group-by KEY]... [--raw [--event NAME]...] [--url URL] [--key KEY] > usage.csv'

/** The export's path and JSON body: the raw-events export, or the analytics export (one customer at most). */
function exportRequest(v: { from: string; to: string; customer: string[]; raw: boolean; event: string[]; window?: string; 'group-by': string[] }): { path: string; body: Record<string, unknown> } {
  const range = { start_time: v.from, end_time: v.to }
  if (v.raw && (v.window || v['group-by'].length)) throw new UsageError('--window and --group-by shape the analytics export: leave out --raw')
  if (v.raw) return { path: '/v1/events/export', body: { ...range, ...(v.customer.length ? { external_customer_ids: v.customer } : {}), ...(v.event.length ? { event_names: v.event } : {}) } }
  if (v.customer.length > 1) throw new UsageError('the analytics export takes one --customer (or none: the whole environment); --raw takes several')
  if (v.event.length) throw new UsageError('--event filters the raw export: add --raw')
  const shape = { ...(v.window ? { window_size: v.window } : {}), ...(v['group-by'].length ? { group_by: v['group-by'] } : {}) }
  return { path: '/v1/events/analytics/export', body: { ...range, ...(v.customer.length ? { external_customer_id: v.customer[0] } : {}), ...shape, format: 'csv' } }
}

/** The export's options; an unknown or malformed one is a usage error (exit code 2), not a stack trace. */
function exportOptions(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        from: { type: 'string' },
        to: { type: 'string' },
        customer: { type: 'string', multiple: true, default: [] },
        event: { type: 'string', multiple: true, default: [] },
        window: { type: 'string' },
        'group-by': { type: 'string', multiple: true, default: [] },
        raw: { type: 'boolean', default: false },
        url: { type: 'string' },
        key: { type: 'string' },
      },
    }).values
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${EXPORT_USAGE}`)
  }
}

/** Streams the export to stdout as it arrives (waiting when stdout is slow); progress on stderr, rewritten in place on a terminal. */
async function runExport(args: string[]): Promise<void> {
  const values = exportOptions(args)
  if (!values.from || !values.to) throw new UsageError(EXPORT_USAGE)
  const key = values.key ?? process.env.METERBILL_API_KEY
  if (!key) throw new UsageError(`an API key is needed: --key KEY or METERBILL_API_KEY\n${EXPORT_USAGE}`)
  const { path, body } = exportRequest({ ...values, from: values.from, to: values.to })
  const url = new URL(path, values.url ?? process.env.METERBILL_URL ?? 'http://127.0.0.1:8080')
  const res = await fetch(url, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (res.status !== 200 || !res.body) {
    const text = await res.text()
    let message = text
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text
    } catch {
      // not JSON: the text as it came
    }
    throw new ExportError(`${url.pathname}: ${res.status} ${message}`)
  }
  const started = Date.now()
  const records = csvRecordCounter()
  const decoder = new TextDecoder()
  let bytes = 0
  let shown = 0
  const tty = process.stderr.isTTY
  const show = (end: boolean) => {
    const line = exportProgress(Math.max(records.records - 1, 0), bytes, Date.now() - started)
    if (tty) process.stderr.write(`\r\x1b[K${line}${end ? '\n' : ''}`)
    else if (end) say(line)
  }
  try {
    for await (const chunk of res.body) {
      bytes += chunk.byteLength
      records.add(decoder.decode(chunk, { stream: true }))
      if (!process.stdout.write(chunk)) await new Promise((resolve) => process.stdout.once('drain', resolve))
      if (Date.now() - shown >= 250) {
        shown = Date.now()
        show(false)
      }
    }
  } catch (err) {
    show(true)
    throw new ExportError(`the export was cut short (the file is incomplete): ${(err as Error).message}`)
  }
  show(true)
}

const BACKFILL_USAGE = 'usage: meterbill backfill FILE.jsonl [--batch N] [--url URL] [--key KEY]'

/** `meterbill backfill`: the file sent batch by batch from its checkpoint, a progress line on stderr. */
async function runBackfill(args: string[]): Promise<void> {
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { batch: { type: 'string' }, url: { type: 'string' }, key: { type: 'string' } } })
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n${BACKFILL_USAGE}`)
  }
  const { values, positionals } = parsed
  if (positionals.length !== 1) throw new UsageError(BACKFILL_USAGE)
  const batch = values.batch === undefined ? 1000 : Number(values.batch)
  if (!Number.isInteger(batch) || batch < 1 || batch > 1000) throw new UsageError(`--batch must be 1-1000\n${BACKFILL_USAGE}`)
  const key = values.key ?? process.env.METERBILL_API_KEY
  if (!key) throw new UsageError(`an API key is needed: --key KEY or METERBILL_API_KEY\n${BACKFILL_USAGE}`)
  const url = new URL('/v1/events/bulk', values.url ?? process.env.METERBILL_URL ?? 'http://127.0.0.1:8080')
  const { backfillFile, BackfillError } = await import('./ingest/backfill-file.ts')
  const started = Date.now()
  const tty = process.stderr.isTTY
  let shown = 0
  try {
    const done = await backfillFile(positionals[0], {
      batch,
      post: async (events) => {
        const res = await fetch(url, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ events }) })
        return { status: res.status, body: (await res.json().catch(() => ({}))) as never }
      },
      onProgress: (p) => {
        const line = `${progressLine(p.offset, p.size, 'backfill')} bytes · ${p.sent.toLocaleString('en-US')} events sent · ${p.rejected} refused · ${Math.round((p.sent * 1000) / Math.max(Date.now() - started, 1))} events/s`
        if (tty) process.stderr.write(`\r\x1b[K${line}`)
        else if (Date.now() - shown >= 5000 || p.offset === p.size) {
          shown = Date.now()
          say(line)
        }
      },
    })
    if (tty) process.stderr.write('\n')
    say(`done: ${done.sent} events sent, ${done.rejected} refused${done.rejected > 0 ? ` (see ${positionals[0]}.rejected)` : ''}`)
  } catch (err) {
    if (err instanceof BackfillError) throw new ExportError(err.message)
    throw err
  }
}

class UsageError extends Error {}
/** A failed export or backfill: its message, exit code 1, no stack. */
class ExportError extends Error {}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv
  if (command === 'export') return runExport(rest)
  if (command === 'backfill') return runBackfill(rest)
  if (command === 'migrate') return runMigrate()
  if (command === 'tenant') return runTenant(rest)
  if (command === 'jobs') return runJobNow(rest)
  if (command === undefined || command === 'help' || command === '--help') {
    say(USAGE)
    return
  }
  const { ROLE_NAMES } = await roles()
  if (command === 'start') return serve(ROLE_NAMES)
  if ((ROLE_NAMES as readonly string[]).includes(command)) return serve([command as RoleName])
  throw new UsageError(`unknown command "${command}"\n\n${USAGE}`)
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof UsageError) {
    say(err.message)
    process.exit(2)
  }
  // roles.ts's ListenError (a port taken), by name: roles.ts is loaded lazily. Its message says what to change.
  if (err instanceof ExportError || (err instanceof Error && err.name === 'ListenError')) {
    say(err.message)
    process.exit(1)
  }
  say(`fatal: ${(err as Error)?.stack ?? String(err)}`)
  process.exit(1)
})
