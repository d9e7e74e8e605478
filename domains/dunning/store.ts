// The SQL of dunning: each environment's settings, the invoices entering or due in a schedule, and the step runs
// (one row per invoice and step: the claim that makes a step run once).
import type { DunningAction, DunningStep } from '../../core/dunning.ts'
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'
import type { Fragment } from '../../infra/records.ts'

export interface SettingsRow {
  enabled: boolean
  steps: DunningStep[]
  enabled_at: Date | null
  updated_at: Date | null
}

export interface StepRunRow {
  invoice_id: string
  step: number
  actions: DunningAction[]
  results: Record<string, string>
  ran_at: Date
}

export async function settingsOf(db: Db, scope: Scope): Promise<SettingsRow | undefined> {
  const [row] = await db`SELECT enabled, steps, enabled_at, updated_at FROM dunning_settings WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row as SettingsRow | undefined
}

export async function saveSettings(db: Db, scope: Scope, s: Omit<SettingsRow, 'updated_at'>, at: Date, by: string): Promise<void> {
  await db`INSERT INTO dunning_settings (tenant_id, environment_id, enabled, steps, enabled_at, updated_at, updated_by)
    VALUES (${scope.tenantId}, ${scope.environmentId}, ${s.enabled}, ${db.json(s.steps as never)}, ${s.enabled_at}, ${at}, ${by})
    ON CONFLICT (tenant_id, environment_id) DO UPDATE SET enabled = EXCLUDED.enabled, steps = EXCLUDED.steps, enabled_at = EXCLUDED.enabled_at,
      updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`
}

interface Scoped {
  id: string
  tenant_id: string
  environment_id: string
}

/** Finalized invoices still owing, due since their environment turned dunning on, not yet in its schedule. */
/** `reach` is a condition on i.customer_id (domains/customers/reach.ts), in entering and due alike. */
export async function entering(db: Db, limit: number, reach: Fragment): Promise<Scoped[]> {
  return (await db`SELECT i.id, i.tenant_id, i.environment_id FROM invoices i
    JOIN dunning_settings s ON s.tenant_id = i.tenant_id AND s.environment_id = i.environment_id AND s.enabled
    WHERE i.dunning_status IS NULL AND i.invoice_status = 'FINALIZED' AND i.status = 'published' AND i.amount_remaining > 0
      AND i.due_date IS NOT NULL AND i.due_date >= s.enabled_at AND ${reach}
    ORDER BY i.due_date, i.id LIMIT ${limit}`) as unknown as Scoped[]
}

/** Invoices whose next step has fallen, in environments with dunning on. */
export async function due(db: Db, now: Date, limit: number, reach: Fragment): Promise<Scoped[]> {
  return (await db`SELECT i.id, i.tenant_id, i.environment_id FROM invoices i
    JOIN dunning_settings s ON s.tenant_id = i.tenant_id AND s.environment_id = i.environment_id AND s.enabled
    WHERE i.dunning_status = 'active' AND i.dunning_next_step_at <= ${now} AND ${reach}
    ORDER BY i.dunning_next_step_at, i.id LIMIT ${limit}`) as unknown as Scoped[]
}

/** Claims a step of an invoice; false when it ran (or is running) already. */
export async function claimStep(db: Db, scope: Scope, invoiceId: string, step: number, actions: DunningAction[], results: Record<string, string>, at: Date): Promise<boolean> {
  const rows = await db`INSERT INTO dunning_step_runs (invoice_id, step, tenant_id, environment_id, actions, results, ran_at)
    VALUES (${invoiceId}, ${step}, ${scope.tenantId}, ${scope.environmentId}, ${db.json(actions)}, ${db.json(results)}, ${at})
    ON CONFLICT (invoice_id, step) DO NOTHING RETURNING step`
  return rows.length > 0
}

export async function saveResults(db: Db, invoiceId: string, step: number, results: Record<string, string>): Promise<void> {
  await db`UPDATE dunning_step_runs SET results = ${db.json(results)} WHERE invoice_id = ${invoiceId} AND step = ${step}`
}

export async function runsOf(db: Db, scope: Scope, invoiceId: string): Promise<StepRunRow[]> {
  return (await db`SELECT invoice_id, step, actions, results, ran_at FROM dunning_step_runs
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND invoice_id = ${invoiceId} ORDER BY step`) as unknown as StepRunRow[]
}
