// Delivering the outbox (two worker jobs, one leader each):
//   webhook-delivery  matches new events to the endpoints subscribed to them and makes first attempts,
//                     oldest event first, one request at a time per endpoint;
//   webhook-retry     the specification's stale-webhook retry job: due retries, paced to rate_limit per
//                     second, skipping excluded tenants and event types not allowed.
// A delivery's state changes only after its request ended, so a run that dies mid-way leaves it due and
// it is sent again (at-least-once; the webhook-id header, the event id, lets receivers drop repeats).
import { inParallel } from '../../core/concurrency.ts'
import type { Config, WebhookRetry } from '../../core/config.ts'
import { newId } from '../../core/ids.ts'
import { signedHeaders } from '../../core/webhook-signing.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Progress } from '../../infra/scheduler.ts'
import { openSecret, sealPlaintextSecrets } from './service.ts'
import * as store from './store.ts'

const BATCH = 500
/** Requests in flight at once: endpoints in parallel for first attempts, retries in parallel under the pace. */
const CONCURRENCY = 8
/** How much of a receiver's answer the attempt log keeps. */
const RESPONSE_KEEP = 1024
/** A run takes no new work after this long, well inside its lease, so a next leader never overlaps it. */
export const RUN_BUDGET_MS = 2 * 60_000
const MAX_BACKOFF_MS = 24 * 3600_000

export interface DeliverySummary {
  events_dispatched: number
  /** Events no enabled endpoint subscribes to. */
  events_skipped: number
  sent: number
  delivered: number
  /** Failed and due again after the backoff. */
  retrying: number
  /** Failed for good: out of attempts, not retryable by the settings, or the endpoint is gone. */
  failed: number
}

const emptySummary = (): DeliverySummary => ({ events_dispatched: 0, events_skipped: 0, sent: 0, delivered: 0, retrying: 0, failed: 0 })

/** Delay before the next attempt after `failures` failures: base, 2×, 4×, … up to a day. */
const backoffMs = (baseMs: number, failures: number): number => Math.min(baseMs * 2 ** (failures - 1), MAX_BACKOFF_MS)

function retryable(settings: WebhookRetry, d: store.DueDelivery, failures: number): boolean {
  return (
    settings.enabled &&
    failures < settings.maxAttempts &&
    !settings.excludedTenants.includes(d.tenant_id) &&
    (settings.allowedEventTypes.length === 0 || settings.allowedEventTypes.includes(d.event_type))
  )
}

interface Outcome {
  statusCode: number | null
  response: string | null
  error: string | null
  durationMs: number
}

/** The first RESPONSE_KEEP bytes of the answer; the rest is not read. */
async function head(res: Response): Promise<string> {
  if (!res.body) return ''
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  while (size < RESPONSE_KEEP) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    size += value.length
  }
  await reader.cancel().catch(() => {})
  return Buffer.concat(chunks).subarray(0, RESPONSE_KEEP).toString('utf8')
}

function reason(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: { code?: string; message?: string } }
  if (e.name === 'TimeoutError') return `no answer within ${timeoutMs} ms`
  return e.cause?.code ?? e.cause?.message ?? e.message
}

async function post(config: Config, d: store.DueDelivery, now: Date): Promise<Outcome> {
  const { timeoutMs } = config.webhooks
  const body = JSON.stringify(d.payload)
  // Wall-clock seconds, not the service clock: receivers compare the timestamp with theirs to refuse replays.
  const timestamp = Math.floor(Date.now() / 1000)
  const rotating = d.previous_secret && d.previous_secret_expires_at && d.previous_secret_expires_at > now
  const stored = rotating ? [d.secret, d.previous_secret!] : [d.secret]
  const started = performance.now()
  const took = () => Math.round(performance.now() - started)
  try {
    // Opened inside the try: a secret this process cannot open (another key) fails this attempt, saying so, not the whole run.
    const secrets = stored.map((s) => openSecret(config, d.endpoint_id, s))
    const res = await fetch(d.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'meterbill-webhooks/1', ...signedHeaders(secrets, d.event_id, timestamp, body) },
      body,
      // A redirect is an answer other than 2xx: following it would send the signed body somewhere unregistered.
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    })
    const response = await head(res)
    const ok = res.status >= 200 && res.status < 300
    return { statusCode: res.status, response, error: ok ? null : `HTTP ${res.status}`, durationMs: took() }
  } catch (err) {
    return { statusCode: null, response: null, error: reason(err, timeoutMs), durationMs: took() }
  }
}

/** Sends one delivery (unless its endpoint is disabled or deleted) and records the outcome. */
async function attempt(deps: Deps, d: store.DueDelivery, summary: DeliverySummary): Promise<boolean> {
  const { backoffMs: baseMs, retry } = deps.config.webhooks
  if (d.endpoint_status !== 'published' || d.disabled) {
    const error = d.disabled && d.endpoint_status === 'published' ? 'endpoint disabled' : 'endpoint deleted'
    const settlement = { status: 'failed' as const, attempts: d.attempts, nextAttemptAt: d.next_attempt_at, statusCode: null, error }
    await deps.sql.begin((tx) => store.settle(tx, d, settlement, deps.clock.now()))
    summary.failed++
    deps.metrics.webhookDeliveries.inc({ outcome: 'failed' })
    return false
  }
  const sentAt = deps.clock.now()
  const outcome = await post(deps.config, d, sentAt)
  const attempts = d.attempts + 1
  const ok = outcome.error === null
  const status = ok ? 'delivered' : retryable(retry, d, attempts) ? 'pending' : 'failed'
  const nextAttemptAt = status === 'pending' ? new Date(sentAt.getTime() + backoffMs(baseMs, attempts)) : d.next_attempt_at
  const logged = { id: newId('atmpt'), response_status_code: outcome.statusCode, response: outcome.response, error: outcome.error, duration_ms: outcome.durationMs, created_at: sentAt }
  await deps.sql.begin((tx) => store.settle(tx, d, { status, attempts, nextAttemptAt, statusCode: outcome.statusCode, error: outcome.error, attempt: logged }, sentAt))
  summary.sent++
  summary[status === 'pending' ? 'retrying' : status]++
  deps.metrics.webhookDeliveries.inc({ outcome: status === 'pending' ? 'retrying' : status })
  return ok
}

/** The webhook-delivery job: seal secrets left in clear, dispatch new events, then first attempts until none are due or the budget is spent. */
export async function deliverNew(deps: Deps, progress: Progress): Promise<DeliverySummary> {
  const summary = emptySummary()
  const deadline = Date.now() + RUN_BUDGET_MS
  // An endpoint that failed in this run gets no more first attempts in it: its later events wait for the next run.
  const failing = new Set<string>()
  await sealPlaintextSecrets(deps, BATCH)
  while (Date.now() < deadline) {
    const now = deps.clock.now()
    const dispatched = await deps.sql.begin((tx) => store.dispatch(tx, now, BATCH))
    summary.events_dispatched += dispatched.filter((e) => e.status === 'pending').length
    summary.events_skipped += dispatched.filter((e) => e.status === 'skipped').length
    const due = await store.dueDeliveries(deps.sql, { now, retries: false, excludedTenants: [], eventTypes: [], skipEndpoints: [...failing], limit: BATCH })
    if (dispatched.length === 0 && due.length === 0) break
    const byEndpoint = new Map<string, store.DueDelivery[]>()
    for (const d of due) {
      const group = byEndpoint.get(d.endpoint_id)
      if (group) group.push(d)
      else byEndpoint.set(d.endpoint_id, [d])
    }
    await inParallel([...byEndpoint.values()], CONCURRENCY, async (deliveries) => {
      for (const d of deliveries) {
        if (!(await attempt(deps, d, summary))) {
          failing.add(d.endpoint_id)
          return
        }
      }
    })
    progress(summary.sent, summary.sent + due.length, 'webhook first attempts')
  }
  return summary
}

/** Waits for a token: `rate` per second, bursts up to `rate` (a token bucket that waits instead of refusing). */
function pace(rate: number): () => Promise<void> {
  let tokens = rate
  let at = Date.now()
  return async function take(): Promise<void> {
    for (;;) {
      const now = Date.now()
      tokens = Math.min(rate, tokens + ((now - at) / 1000) * rate)
      at = now
      if (tokens >= 1) {
        tokens -= 1
        return
      }
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(((1 - tokens) / rate) * 1000)))
    }
  }
}

/** The webhook-retry job (the specification's stale-webhook retry job): due retries, paced, by its settings. */
export async function retryDue(deps: Deps, progress: Progress): Promise<DeliverySummary | { enabled: false }> {
  const settings = deps.config.webhooks.retry
  if (!settings.enabled) return { enabled: false }
  const summary = emptySummary()
  const deadline = Date.now() + RUN_BUDGET_MS
  const take = pace(settings.ratePerSecond)
  // Due as of the run's start: a retry failing again is due after its backoff, not again in this run.
  const now = deps.clock.now()
  while (Date.now() < deadline) {
    const due = await store.dueDeliveries(deps.sql, {
      now,
      retries: true,
      excludedTenants: settings.excludedTenants,
      eventTypes: settings.allowedEventTypes,
      skipEndpoints: [],
      limit: BATCH,
    })
    if (due.length === 0) break
    await inParallel(due, CONCURRENCY, async (d) => {
      await take()
      await attempt(deps, d, summary)
    })
    progress(summary.sent, summary.sent + due.length, 'webhook retries')
  }
  return summary
}
