// (7) Responsiveness while a job runs: GET /v1/health answered by the same process while `runBilling`
// bills N subscriptions (the billing bench's world), against the same probe with the process idle, in
// the same run. A probe is sent every 50 ms from this process over HTTP; its latency includes any time the
// event loop was held by the run (the engines share the thread: PGlite's WASM and chDB), so the worst one
// shows the longest stall a client meets. Target: every probe answered within 200 ms.
import { cpus, loadavg } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { runBilling } from '../domains/invoicing/invoices/run.ts'
import { fmt, percentile, report } from './common.ts'
import { billingWorld } from './billing-world.ts'

const N = Number(process.env.BENCH_SUBSCRIPTIONS ?? 2_000)
const { running } = await billingWorld('health', N, 10)
const url = `http://127.0.0.1:${running.port}/v1/health`

/** Probes every 50 ms until `done` resolves; latencies in ms. */
async function probe(done: Promise<unknown>): Promise<number[]> {
  let finished = false
  void done.finally(() => (finished = true))
  const latencies: number[] = []
  while (!finished) {
    const t = performance.now()
    const res = await fetch(url)
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`health answered ${res.status}`)
    latencies.push(performance.now() - t)
    await new Promise((r) => setTimeout(r, 50))
  }
  return latencies.sort((a, b) => a - b)
}

const idle = await probe(new Promise((r) => setTimeout(r, 3000)))
const loop = monitorEventLoopDelay({ resolution: 10 })
loop.enable()
const started = performance.now()
const run = runBilling(running.deps)
const busy = await probe(run)
const summary = await run
const seconds = (performance.now() - started) / 1000
loop.disable()
const stall = loop.max / 1e6
await running.stop()
if (summary.failed > 0 || summary.invoices_created !== 2 * N) throw new Error(`unexpected run: ${JSON.stringify(summary)}`)

const row = (name: string, l: number[]) => `| ${name} | ${fmt(l.length)} | ${fmt(percentile(l, 50), 1)} | ${fmt(percentile(l, 99), 1)} | ${fmt(l[l.length - 1], 1)} | ${fmt(l[l.length - 1] / percentile(idle, 50), 1)} |`
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end`
report(`## 7. Health while a billing run runs

\`GET /v1/health\` (a query to each engine) every 50 ms from the same process, first idle for 3 s, then while \`runBilling\`
bills ${fmt(N)} subscriptions in that process (${fmt(summary.invoices_created)} invoices in ${fmt(seconds, 1)} s, embedded PGlite and chDB).
"ratio" is the worst latency ÷ the idle median of this run; the longest the event loop was held during the run
(perf_hooks' event-loop delay, what no request can avoid waiting) was ${fmt(stall)} ms. Target: every probe within 200 ms. Machine: ${machine}.

| process | probes | p50 ms | p99 ms | worst ms | worst ÷ idle p50 |
| --- | ---: | ---: | ---: | ---: | ---: |
${row('idle', idle)}
${row('billing run', busy)}`)
process.exit(0)
