import { availableParallelism } from 'node:os'
import { configDefaults, defineConfig } from 'vitest/config'
import { SHIM_PORT } from './test/clickhouse-http/setup.ts'

const ALL = ['core/**/*.test.ts', 'infra/**/*.test.ts', 'domains/**/*.test.ts', 'http/**/*.test.ts', 'ingest/**/*.test.ts', 'aggregator/**/*.test.ts', 'worker/**/*.test.ts', 'test/**/*.test.ts']
// The files whose statements cover what the server path sends (inserts, id lookups, rollup and raw reads, streams,
// migrations, a billing run), run again through @clickhouse/client's HTTP connection against the shim. The breakdown
// reads come through the analytics, invoice-usage and export files (breakdowns.test.ts, 75 s, runs embedded only).
const SERVER_PATH = [
  'aggregator/insert-batch.test.ts',
  'aggregator/stored-rows.test.ts',
  'aggregator/breakdown-backfill.test.ts',
  'aggregator/dedup-filter-server.test.ts',
  'aggregator/dedup-filter.test.ts',
  'ingest/ingest.test.ts',
  'domains/usage/queries/usage.test.ts',
  'domains/invoicing/invoices/usage-analytics.test.ts',
  'domains/analytics/**/*.test.ts',
  'domains/invoicing/invoices/billing-run.test.ts',
  'infra/clickhouse-stream.test.ts',
  'domains/usage/events/export.test.ts',
  'domains/invoicing/reconciliation/reconciliation.test.ts',
  'test/foundation/migrate.test.ts',
]

const MULTIPROCESS = 'test/multiprocess/**/*.test.ts'

// chDB binds one data directory per process, so every test file runs in its own forked process.
export default defineConfig({
  test: {
    pool: 'forks',
    // A file more than there are cores: most of a file's time is spent waiting (Kafka, timers, the engines' threads).
    // On 2 cores vitest's default of one worker left a third of the machine idle, and two still a quarter of it
    // (docs/development.md, "How long the suite takes").
    maxWorkers: availableParallelism() + 1,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'embedded', include: ALL, exclude: [...configDefaults.exclude, MULTIPROCESS], globalSetup: ['test/global-setup.ts'] } },
      // In CI (or with CLICKHOUSE_HTTP=1): the ClickHouse server path, which no other run here exercises.
      ...(process.env.CI || process.env.CLICKHOUSE_HTTP
        ? [{ extends: true, test: { name: 'clickhouse-http', include: SERVER_PATH, globalSetup: ['test/global-setup.ts', 'test/clickhouse-http/setup.ts'], env: { CLICKHOUSE_URL: `http://127.0.0.1:${SHIM_PORT}` } } }]
        : []),
      // The multi-process fault test restarts the machine's Postgres and runs a Kafka cluster of its own, so it never runs
      // beside other files: CI runs it as a step of its own (.ci/run: MULTIPROCESS_TEST=1 npx vitest run --project
      // multiprocess), and leaves it out of CI's `npm test`. Locally it is listed, and skips without MULTIPROCESS_TEST.
      ...(!process.env.CI || process.env.MULTIPROCESS_TEST
        ? [{ extends: true, test: { name: 'multiprocess', include: [MULTIPROCESS], testTimeout: 360_000, hookTimeout: 300_000 } }]
        : []),
    ],
  },
})
