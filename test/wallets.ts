// Helpers for the credit grant and wallet tests: requests that must succeed, wallets, top-ups, the
// ledger, and the scheduled jobs run on demand.
import { expect } from 'vitest'
import { jobs } from '../worker/jobs.ts'
import { runJob } from '../infra/scheduler.ts'
import type { Harness } from './harness.ts'

/** A request that must answer `status` (200 unless told): fixtures and steps fail loudly where they fail. */
export async function call(h: Harness, method: string, path: string, body?: unknown, status = 200): Promise<any> {
  const res = await h.http(method, path, { body })
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status)
  return res.body
}

export const newWallet = (h: Harness, customerId: string, body: Record<string, unknown> = {}): Promise<any> =>
  call(h, 'POST', '/v1/wallets', { customer_id: customerId, currency: 'USD', ...body })

/** A top-up; free credits unless the body names another reason. */
export const topUp = (h: Harness, walletId: string, body: Record<string, unknown>): Promise<any> =>
  call(h, 'POST', `/v1/wallets/${walletId}/top-up`, { transaction_reason: 'FREE_CREDIT_GRANT', ...body })

/** The wallet's transactions, oldest first; `query` adds filters ("&type=debit"). */
export const ledger = async (h: Harness, walletId: string, query = ''): Promise<any[]> =>
  (await call(h, 'GET', `/v1/wallets/${walletId}/transactions?order=asc&limit=1000${query}`)).items

/** Runs one of the worker's jobs now, as the scheduler would. */
export const runNamedJob = (h: Harness, name: string): Promise<Record<string, unknown>> => runJob(h.running.deps, jobs.find((j) => j.name === name)!)
