// The scheduled jobs the worker role runs. Each domain adds its jobs here.
import { advanceSubscriptions } from '../domains/subscriptions/lifecycle.ts'
import { applyDueSchedules } from '../domains/invoicing/changes/schedules.ts'
import { processPlanSyncs } from '../domains/invoicing/changes/plan-sync.ts'
import { processCreditGrants } from '../domains/credits/grants/service.ts'
import { checkBalanceAlerts, expireWalletCredits } from '../domains/credits/wallets/service.ts'
import { expireHolds } from '../domains/credits/wallets/holds.ts'
import { markOverdue, runBilling } from '../domains/invoicing/invoices/run.ts'
import { runOpenSimulations } from '../domains/invoicing/simulations/run.ts'
import { deliverNew, retryDue, RUN_BUDGET_MS } from '../domains/webhooks/delivery.ts'
import { syncInvoices } from '../domains/integrations/service.ts'
import { syncAccounting } from '../domains/integrations/accounting.ts'
import { deliverCommunications } from '../domains/communications/service.ts'
import { runDunning } from '../domains/dunning/service.ts'
import { runUsageAdjustments } from '../domains/invoicing/adjustments/run.ts'
import { completePendingCorrections } from '../domains/usage/corrections/service.ts'
import { runScheduledExports } from '../domains/exports/runs.ts'
import { runOpenTasks } from '../domains/tasks/run.ts'
import type { Job } from '../infra/scheduler.ts'

// onTestClocks: the job acts on customers' records by deps.clock's time and honours deps.testClockId, so advancing
// a test clock runs it for the clock's customers (domains/clocks/advance.ts); the others run on the wall clock only.
export const jobs: Job[] = [
  // Finalized invoices pushed to the connected payment provider, and invoices, credit notes and payments to the
  // connected accounting system (QuickBooks); failed pushes retried with backoff (rule 16).
  { name: 'invoice-sync', schedule: '* * * * *', leaseMs: 10 * 60_000, run: async (deps, progress) => ({ ...(await syncInvoices(deps, progress)), accounting: await syncAccounting(deps) }) },
  // Starts, trial ends, scheduled cancellations and period ends, every minute.
  { name: 'subscription-lifecycle', onTestClocks: true, schedule: '* * * * *', leaseMs: 5 * 60_000, run: async (deps) => ({ ...(await advanceSubscriptions(deps)) }) },
  // Plan changes scheduled for the end of a period move their subscriptions onto the target plan when due.
  { name: 'subscription-schedules', onTestClocks: true, schedule: '* * * * *', leaseMs: 5 * 60_000, run: async (deps) => ({ ...(await applyDueSchedules(deps)) }) },
  // Plan sync runs (POST /v1/plans/{id}/sync/subscriptions): each subscription moved once, resumed from the run's cursor.
  { name: 'plan-sync', schedule: '* * * * *', leaseMs: 30 * 60_000, run: async (deps, progress) => ({ ...(await processPlanSyncs(deps, progress)) }) },
  // Credits past their expiry_date leave their wallets (balances already leave them out by date).
  { name: 'wallet-credit-expiry', onTestClocks: true, schedule: '* * * * *', leaseMs: 5 * 60_000, run: async (deps) => ({ ...(await expireWalletCredits(deps)) }) },
  // Credit holds past their expiry are marked expired and announced (they stopped counting at expires_at already).
  { name: 'wallet-hold-expiry', schedule: '* * * * *', leaseMs: 5 * 60_000, run: async (deps) => ({ ...(await expireHolds(deps)) }) },
  // Credit grant applications: every due period of every grant, exactly once, oldest first (rule 14).
  { name: 'credit-grant-applications', onTestClocks: true, schedule: '* * * * *', leaseMs: 10 * 60_000, run: async (deps) => ({ ...(await processCreditGrants(deps)) }) },
  // Due billing points get their invoices (catch-up in order); drafts past their grace period are finalized.
  { name: 'billing-run', onTestClocks: true, schedule: '*/5 * * * *', leaseMs: 30 * 60_000, run: async (deps, progress) => ({ ...(await runBilling(deps, progress)) }) },
  // Usage corrections a request left pending (stopped between Postgres and ClickHouse) are written, once.
  { name: 'usage-corrections', schedule: '* * * * *', leaseMs: 10 * 60_000, run: async (deps) => ({ ...(await completePendingCorrections(deps)) }) },
  // Import and export tasks (/v1/tasks) whose process stopped before or while working them, from their checkpoint.
  { name: 'tasks', schedule: '* * * * *', leaseMs: 30 * 60_000, run: async (deps) => ({ ...(await runOpenTasks(deps)) }) },
  // Pricing simulations whose process stopped before or while running them (they start at once where asked).
  { name: 'pricing-simulations', schedule: '* * * * *', leaseMs: 30 * 60_000, run: async (deps) => ({ ...(await runOpenSimulations(deps)) }) },
  // invoice.payment.overdue once per finalized invoice still owing after its due date.
  { name: 'invoice-overdue', onTestClocks: true, schedule: '0 2 * * *', leaseMs: 30 * 60_000, run: async (deps) => ({ ...(await markOverdue(deps)) }) },
  // Ongoing-balance and feature wallet-balance alerts: usage moves them without a ledger change.
  { name: 'wallet-balance-alerts', onTestClocks: true, schedule: '* * * * *', leaseMs: 5 * 60_000, run: async (deps) => ({ ...(await checkBalanceAlerts(deps)) }) },
  // Outbox → webhook endpoints: new events' first attempts every 5 seconds; a run stops taking work after
  // RUN_BUDGET_MS, so the lease (twice that and the last request's timeout) outlives it.
  { name: 'webhook-delivery', schedule: '*/5 * * * * *', leaseMs: 2 * RUN_BUDGET_MS + 60_000, run: async (deps, progress) => ({ ...(await deliverNew(deps, progress)) }) },
  // Customer email: new finalized invoices, credit notes and succeeded payments get their message; due messages
  // (new, and 4xx retries with backoff) are sent once each (a claim with a lease; docs/invoicing.md "Email").
  { name: 'communications', schedule: '* * * * *', leaseMs: 10 * 60_000, run: async (deps, progress) => ({ ...(await deliverCommunications(deps, progress)) }) },
  // Dunning: overdue invoices enter their environment's schedule; due steps run once each (reminder, payment retry, final action).
  { name: 'dunning', onTestClocks: true, schedule: '*/5 * * * *', leaseMs: 30 * 60_000, run: async (deps, progress) => ({ ...(await runDunning(deps, progress)) }) },
  // Finalized periods whose usage moved since (late events, corrections): the difference issued once, as a USAGE_ADJUSTMENT
  // invoice or a credit note (docs/invoicing.md "Late usage and corrections settle themselves").
  { name: 'usage-adjustments', onTestClocks: true, schedule: '*/5 * * * *', leaseMs: 30 * 60_000, run: async (deps, progress) => ({ ...(await runUsageAdjustments(deps, progress)) }) },
  // The stale-webhook retry job (WEBHOOK_RETRY_* settings): due retries with exponential backoff.
  { name: 'webhook-retry', schedule: '* * * * *', leaseMs: 2 * RUN_BUDGET_MS + 60_000, run: async (deps, progress) => ({ ...(await retryDue(deps, progress)) }) },
  // Scheduled exports (/v1/tasks/scheduled): each task's whole windows planned once from its watermark, then run under
  // leases (retried with backoff); a run's budget is 10 minutes, the lease outlives a long run.
  { name: 'scheduled-exports', schedule: '* * * * *', leaseMs: 45 * 60_000, run: async (deps, progress) => ({ ...(await runScheduledExports(deps, progress)) }) },
]
