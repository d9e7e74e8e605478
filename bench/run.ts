// `npm run bench`: runs every bench/*.bench.ts in its own process (each opens its own embedded engines)
// and writes their sections, with the machine and the date, to BENCHMARKS.md.
import { execFileSync } from 'node:child_process'
import { cpus, loadavg, totalmem, release, tmpdir } from 'node:os'
import { mkdtempSync, readdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { BENCH_TOPIC_PREFIX } from './common.ts'

const dir = fileURLToPath(new URL('.', import.meta.url))
const root = join(dir, '..')
const out = join(root, 'BENCHMARKS.md')
const only = process.argv[2]
const files = readdirSync(dir).filter((f) => f.endsWith('.bench.ts') && (!only || f.includes(only))).sort()

const cpu = cpus()
writeFileSync(
  out,
  `# Benchmarks\n\nWritten by \`npm run bench\` (bench/run.ts). Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ` +
    `${Math.round(totalmem() / 2 ** 30)} GiB RAM, Linux ${release()}, Node ${process.version}. ` +
    `Date: ${new Date().toISOString()}. Load average at start: ${loadavg().map((l) => l.toFixed(1)).join(', ')} (other work on the machine skews ` +
    `every number). Embedded engines (PGlite, chDB) unless noted; load generator on the same machine.\n\n`,
)
// Every section's data and topics, removed after the last one (bench/common.ts, benchDataDir and removeBenchTopics, say why).
const dataRoot = mkdtempSync(join(tmpdir(), 'meterbill-bench-run-'))
for (const f of files) {
  process.stderr.write(`bench: ${f}\n`)
  try {
    execFileSync(process.execPath, ['--import', 'tsx', join(dir, f)], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, BENCH_OUT: out, BENCH_DATA_ROOT: dataRoot }, cwd: root })
  } catch (err) {
    writeFileSync(out, `${readFileSync(out, 'utf8')}## ${f}\n\nFailed: ${(err as Error).message.split('\n')[0]}\n\n`)
  }
}
rmSync(dataRoot, { recursive: true, force: true })
if (process.env.KAFKA_BROKERS) {
  const admin = new Kafka({ brokers: process.env.KAFKA_BROKERS.split(','), logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
  const topics = (await admin.listTopics()).filter((t) => t.startsWith(BENCH_TOPIC_PREFIX))
  if (topics.length > 0) await admin.deleteTopics({ topics })
  await admin.disconnect()
}
process.stderr.write(`bench: wrote ${out}\n`)
