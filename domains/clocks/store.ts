// Test clocks' rows, the next instant a clock's customers have something due, and the hard delete of
// a clock's customers with everything of theirs.
import type { Scope } from '../../core/scope.ts'
import type { Db, Tx } from '../../infra/postgres.ts'
import type { RecordRow, RecordTable } from '../../infra/records.ts'

export const CLOCKS: RecordTable = { name: 'test_clocks', noun: 'test_clock', prefix: 'clock' }

export type ClockStatus = 'ready' | 'advancing' | 'internal_failure'

export interface ClockRow extends RecordRow {
  name: string
  frozen_time: Date
  clock_status: ClockStatus
  advance_target: Date | null
  advance_started_from: Date | null
  advance_steps: number
  failure_reason: string | null
}

/**
 * Takes the clock for an advance to `target`: ready (or failed, or advancing but silent for `staleMs`:
 * its process died, the jobs catch up from where it stopped). `updated_at` is the advance's heartbeat (wall clock). Answers the row, or undefined when it is busy.
 */
export async function beginAdvance(db: Db, scope: Scope, id: string, target: Date, staleMs: number, by: string): Promise<ClockRow | undefined> {
  const [row] = await db<ClockRow[]>`UPDATE test_clocks SET clock_status = 'advancing', advance_target = ${target}, advance_started_from = frozen_time,
      advance_steps = 0, failure_reason = NULL, version = version + 1, updated_at = now(), updated_by = ${by}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status = 'published'
      AND (clock_status <> 'advancing' OR updated_at < now() - make_interval(secs => ${staleMs / 1000}))
    RETURNING *`
  return row
}

/** The clock reached `frozenTime` (one more step); `updated_at` is the advance's heartbeat (wall clock). */
export async function stepped(db: Db, id: string, frozenTime: Date, done: boolean): Promise<void> {
  await db`UPDATE test_clocks SET frozen_time = ${frozenTime}, advance_steps = advance_steps + 1, updated_at = now(),
      clock_status = ${done ? 'ready' : 'advancing'}, advance_target = ${done ? null : db`advance_target`}, advance_started_from = ${done ? null : db`advance_started_from`}
    WHERE id = ${id}`
}

export async function failed(db: Db, id: string, reason: string): Promise<void> {
  await db`UPDATE test_clocks SET clock_status = 'internal_failure', failure_reason = ${reason}, updated_at = now() WHERE id = ${id}`
}

/**
 * The first instant after `after` at which a job has something to do for the clock's customers: a period
 * end, trial end, start, cancellation or end date; a scheduled plan change; a credit grant application;
 * a wallet credit's expiry; a draft's finalization; a dunning step; an invoice falling overdue (the instant after its due date).
 */
export async function nextDue(db: Db, clockId: string, after: Date): Promise<Date | undefined> {
  const [row] = await db<{ t: Date | null }[]>`
    WITH c AS (SELECT id FROM customers WHERE test_clock_id = ${clockId}),
      s AS (SELECT * FROM subscriptions WHERE customer_id IN (SELECT id FROM c) AND status = 'published' AND subscription_status NOT IN ('cancelled', 'draft'))
    SELECT min(t) AS t FROM (
      SELECT current_period_end AS t FROM s
      UNION ALL SELECT trial_end FROM s WHERE subscription_status = 'trialing'
      UNION ALL SELECT start_date FROM s WHERE subscription_status = 'not_started'
      UNION ALL SELECT cancel_at FROM s
      UNION ALL SELECT end_date FROM s
      UNION ALL SELECT scheduled_at FROM subscription_schedules WHERE schedule_status = 'pending' AND status = 'published' AND subscription_id IN (SELECT id FROM s)
      UNION ALL SELECT scheduled_for FROM credit_grant_applications WHERE application_status = 'pending' AND subscription_id IN (SELECT id FROM s)
      UNION ALL SELECT expiry_date FROM wallet_transactions WHERE type = 'credit' AND credits_available > 0 AND transaction_status = 'completed' AND customer_id IN (SELECT id FROM c)
      UNION ALL SELECT finalize_after FROM invoices WHERE invoice_status = 'DRAFT' AND status = 'published' AND customer_id IN (SELECT id FROM c)
      UNION ALL SELECT dunning_next_step_at FROM invoices WHERE dunning_status = 'active' AND customer_id IN (SELECT id FROM c)
      UNION ALL SELECT due_date + interval '1 millisecond' FROM invoices WHERE invoice_status = 'FINALIZED' AND overdue_notified_at IS NULL AND amount_remaining > 0
        AND status = 'published' AND customer_id IN (SELECT id FROM c)
    ) due WHERE t > ${after}`
  return row?.t ?? undefined
}

/** Columns by which a row belongs to a clock's customer, directly or through one of its records ('id': the record itself). */
const OWNER_COLUMNS = ['id', 'customer_id', 'subscription_id', 'invoice_id', 'wallet_id', 'credit_note_id', 'payment_id', 'destination_id', 'entity_id'] as const

/** The clock's customers and the records of theirs that other rows refer to by one of OWNER_COLUMNS. */
async function ownedIds(tx: Tx, clockId: string): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`
    WITH c AS (SELECT id FROM customers WHERE test_clock_id = ${clockId}),
      s AS (SELECT id FROM subscriptions WHERE customer_id IN (SELECT id FROM c)),
      i AS (SELECT id FROM invoices WHERE customer_id IN (SELECT id FROM c) OR subscription_id IN (SELECT id FROM s))
    SELECT id FROM c UNION ALL SELECT id FROM s UNION ALL SELECT id FROM i
    UNION ALL SELECT id FROM wallets WHERE customer_id IN (SELECT id FROM c)
    UNION ALL SELECT id FROM credit_notes WHERE invoice_id IN (SELECT id FROM i)
    UNION ALL SELECT id FROM payments WHERE destination_id IN (SELECT id FROM i)`
  return rows.map((r) => r.id)
}

/**
 * Deletes a clock's customers and every row that belongs to them, then the clock. Rows are found by
 * OWNER_COLUMNS in every table, so records of features added later go too; ids are unique across tables,
 * so matching any owned id is safe. The outbox (webhook_*) stays: it is the environment's log of what was
 * announced. Foreign keys decide the order: a delete one refuses is tried again after the others.
 */
export async function deleteClockAndCustomers(tx: Tx, clockId: string): Promise<void> {
  const ids = await ownedIds(tx, clockId)
  const columns = await tx<{ table_name: string; column_name: string }[]>`SELECT c.table_name, c.column_name FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
    WHERE c.table_schema = current_schema() AND c.column_name = ANY(${[...OWNER_COLUMNS]}::text[]) AND c.table_name NOT LIKE 'webhook\\_%' AND c.table_name <> 'test_clocks'`
  const byTable = new Map<string, string[]>()
  for (const { table_name, column_name } of columns) byTable.set(table_name, [...(byTable.get(table_name) ?? []), column_name])
  let pending = [...byTable.entries()]
  for (let pass = 0; pending.length > 0 && ids.length > 0; pass++) {
    const refused: typeof pending = []
    for (const [table, cols] of pending) {
      try {
        await tx.savepoint((sp) => {
          const where = cols.map((c) => sp`${sp(c)} = ANY(${ids}::text[])`).reduce((a, b) => sp`${a} OR ${b}`)
          return sp`DELETE FROM ${sp(table)} WHERE ${where}`
        })
      } catch (err) {
        // 23503: another row still refers to one being deleted; it goes in this pass, so the next succeeds.
        if ((err as { code?: string }).code !== '23503' || pass > byTable.size) throw err
        refused.push([table, cols])
      }
    }
    pending = refused
  }
  await tx`DELETE FROM test_clocks WHERE id = ${clockId}`
}
