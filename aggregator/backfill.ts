// Backfill: a new meter, or new filters, count events stored before the change. Each pending revision is
// filled from raw events that have no row for it yet, in pages, with progress; then queries switch to it.
// It starts `backfillSettleMs` after the change and only reads events inserted at least half that long
// ago: batches resolved with the old rules have landed by then, later ones already carry the revision.
// The anti-join (no row for this revision yet) makes a rerun or an overlap with live batches harmless.
import { resolveUsage } from '../core/meters.ts'
import type { Deps } from '../infra/deps.ts'
import { revisionRules } from '../domains/catalog/meters/service.ts'
import * as meters from '../domains/catalog/meters/store.ts'
import { runJobIfFree, type Job } from '../infra/scheduler.ts'
import { writeCommitted } from '../infra/read-cache.ts'
import { countEvents, eventsMissingRows, insertMeterUsage, type MeterUsageInsert } from './store.ts'

const PAGE = 10_000

async function backfillRevision(deps: Deps, meter: meters.MeterRow): Promise<number> {
  const rules = revisionRules(meter)
  const scope = { tenantId: meter.tenant_id, environmentId: meter.environment_id }
  const total = await countEvents(deps.ch, { ...scope, eventName: meter.event_name })
  let processed = 0
  await meters.recordProgress(deps.sql, meter.id, meter.revision, { status: 'running', processed, total, at: deps.clock.now() })
  let after: { customer: string; timestamp: string; id: string } | undefined
  for (;;) {
    const page = await eventsMissingRows(
      deps.ch,
      { ...scope, eventName: meter.event_name, meterId: meter.id, revision: meter.revision, settledMs: Math.floor(deps.config.backfillSettleMs / 2) },
      { after, limit: PAGE },
    )
    if (page.length === 0) break
    const rows: MeterUsageInsert[] = []
    for (const e of page) {
      const r = resolveUsage(rules, { eventName: e.event_name, properties: JSON.parse(e.properties) as Record<string, unknown> })
      if (r && 'row' in r) {
        rows.push({ tenant_id: scope.tenantId, environment_id: scope.environmentId, external_customer_id: e.external_customer_id, source: e.source, timestamp: e.timestamp, event_id: e.id, row: r.row })
      }
    }
    const last = page[page.length - 1]
    await insertMeterUsage(deps.ch, rows, `backfill:${meter.id}:${meter.revision}:${page[0].id}:${last.id}:${page.length}`)
    writeCommitted()
    after = { customer: last.external_customer_id, timestamp: last.timestamp, id: last.id }
    processed += page.length
    await meters.recordProgress(deps.sql, meter.id, meter.revision, { status: 'running', processed, at: deps.clock.now() })
  }
  await meters.recordProgress(deps.sql, meter.id, meter.revision, { status: 'done', processed, at: deps.clock.now() })
  await meters.markReady(deps.sql, meter.id, meter.revision)
  writeCommitted()
  return processed
}

const backfillJob: Job = {
  name: 'meter-backfill',
  schedule: '* * * * *',
  leaseMs: 30 * 60_000,
  async run(deps, progress) {
    const pending = await meters.pendingRevisions(deps.sql, new Date(deps.clock.now().getTime() - deps.config.backfillSettleMs))
    let events = 0
    for (const [i, meter] of pending.entries()) {
      try {
        events += await backfillRevision(deps, meter)
      } catch (err) {
        await meters.recordProgress(deps.sql, meter.id, meter.revision, { status: 'failed', processed: 0, error: (err as Error).message, at: deps.clock.now() })
        throw err
      }
      progress(i + 1, pending.length)
    }
    return { revisions: pending.length, events }
  },
}

/**
 * Polls for settled changes each second (a cheap indexed query) so a new meter is usable within seconds. Every api and
 * worker process polls; one holds the job's lease and fills. The others wait, saying so once (at info) until they see
 * nothing pending or run it themselves: a lease held elsewhere is the normal case, not a failure.
 */
export function startBackfillLoop(deps: Deps): () => Promise<void> {
  let running: Promise<unknown> | undefined
  let waiting = false
  const timer = setInterval(() => {
    if (running) return
    running = meters
      .pendingRevisions(deps.sql, new Date(deps.clock.now().getTime() - deps.config.backfillSettleMs))
      .then(async (pending) => {
        const ran = pending.length > 0 ? await runJobIfFree(deps, backfillJob) : undefined
        if (pending.length === 0 || ran) waiting = false
        else if (!waiting) {
          waiting = true
          deps.logger.info({ job: backfillJob.name, revisions: pending.length }, 'meter backfill runs in another process (it holds the lease); waiting for it')
        }
      })
      .catch((err) => deps.logger.warn({ err }, 'meter backfill failed; retrying'))
      .finally(() => {
        running = undefined
      })
  }, 1000)
  timer.unref()
  return async () => {
    clearInterval(timer)
    await running
  }
}
