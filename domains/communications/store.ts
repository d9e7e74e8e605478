// The SQL of customer email: each environment's settings, the message records (queued once per source, claimed
// with a lease before a send, settled after it), their attempts, and the records still waiting for a message.
import type { Scope } from '../../core/scope.ts'
import { newId } from '../../core/ids.ts'
import type { Db } from '../../infra/postgres.ts'
import { decodeRow, filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../infra/records.ts'

export const MESSAGES: RecordTable = { name: 'communications', noun: 'communication', prefix: 'comm' }

export const KINDS = ['invoice', 'credit_note', 'payment_receipt', 'dunning_reminder'] as const
export type Kind = (typeof KINDS)[number]
export type DeliveryStatus = 'pending' | 'sending' | 'sent' | 'retrying' | 'failed' | 'skipped' | 'unknown'

export const FILTERS: FilterSpec = filterSpec({
  eq: { customer_id: 'customer_id', invoice_id: 'invoice_id', kind: 'kind', delivery_status: 'delivery_status' },
  gte: { start_time: 'created_at' },
  lt: { end_time: 'created_at' },
})

export interface Template {
  subject?: string
  text?: string
  html?: string
}

export interface SettingsRow {
  from_email: string
  from_name: string | null
  reply_to: string | null
  auto_send: Partial<Record<Kind, boolean>>
  templates: Partial<Record<Kind, Template>>
  updated_at: Date | null
}

export interface MessageRow extends RecordRow {
  kind: Kind
  source_key: string
  customer_id: string
  invoice_id: string | null
  credit_note_id: string | null
  payment_id: string | null
  to_email: string | null
  from_email: string
  subject: string
  message_id: string
  delivery_status: DeliveryStatus
  attempts: number
  next_attempt_at: Date
  claimed_by: string | null
  lease_until: Date | null
  transport: string | null
  file_path: string | null
  last_error: string | null
  sent_at: Date | null
  variables: Record<string, string>
}

export interface AttemptRow {
  id: string
  communication_id: string
  attempted_at: Date
  transport: string
  outcome: 'sent' | 'transient' | 'permanent' | 'unknown'
  response_code: number | null
  response: string | null
}

export async function settingsOf(db: Db, scope: Scope): Promise<SettingsRow | undefined> {
  const [row] = await db`SELECT from_email, from_name, reply_to, auto_send, templates, updated_at FROM communication_settings
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row as SettingsRow | undefined
}

export async function saveSettings(db: Db, scope: Scope, s: Omit<SettingsRow, 'updated_at'>, at: Date, by: string): Promise<void> {
  await db`INSERT INTO communication_settings (tenant_id, environment_id, from_email, from_name, reply_to, auto_send, templates, updated_at, updated_by)
    VALUES (${scope.tenantId}, ${scope.environmentId}, ${s.from_email}, ${s.from_name}, ${s.reply_to}, ${db.json(s.auto_send)}, ${db.json(s.templates as never)}, ${at}, ${by})
    ON CONFLICT (tenant_id, environment_id) DO UPDATE SET from_email = EXCLUDED.from_email, from_name = EXCLUDED.from_name, reply_to = EXCLUDED.reply_to,
      auto_send = EXCLUDED.auto_send, templates = EXCLUDED.templates, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`
}

export type NewMessage = Pick<MessageRow, 'id' | 'kind' | 'source_key' | 'customer_id' | 'invoice_id' | 'credit_note_id' | 'payment_id' | 'to_email' | 'from_email' | 'subject' | 'message_id' | 'delivery_status' | 'last_error' | 'variables'>

/** Queues a message; undefined when its source already has one (another worker, or an earlier run, queued it). */
export async function insertMessage(db: Db, scope: Scope, m: NewMessage, at: Date, by: string): Promise<MessageRow | undefined> {
  const [row] = await db`INSERT INTO communications ${db({
    ...m,
    variables: db.json(m.variables),
    tenant_id: scope.tenantId,
    environment_id: scope.environmentId,
    attempts: 0,
    next_attempt_at: at,
    created_at: at,
    created_by: by,
    updated_at: at,
    updated_by: by,
  } as never)} ON CONFLICT (tenant_id, environment_id, source_key) DO NOTHING RETURNING *`
  return row ? decodeRow<MessageRow>(MESSAGES, row) : undefined
}

/**
 * Claims a message for one send: only one caller's UPDATE matches a pending or retrying message that is due, so two
 * workers never both send it. The claim commits before the SMTP conversation starts.
 */
export async function claim(db: Db, id: string, worker: string, transport: string, now: Date, leaseUntil: Date): Promise<MessageRow | undefined> {
  const [row] = await db`UPDATE communications SET delivery_status = 'sending', claimed_by = ${worker}, lease_until = ${leaseUntil}, transport = ${transport},
      attempts = attempts + 1, updated_at = ${now}, version = version + 1
    WHERE id = ${id} AND delivery_status IN ('pending', 'retrying') AND next_attempt_at <= ${now} RETURNING *`
  return row ? decodeRow<MessageRow>(MESSAGES, row) : undefined
}

export interface Outcome {
  delivery_status: 'sent' | 'retrying' | 'failed'
  attempt: Omit<AttemptRow, 'id' | 'communication_id' | 'attempted_at' | 'transport'>
  next_attempt_at?: Date
  file_path?: string
}

/** Settles a claimed message with its attempt; a claim that is no longer this worker's (it expired) is left alone. */
export async function settle(db: Db, row: MessageRow, worker: string, outcome: Outcome, now: Date): Promise<boolean> {
  const [updated] = await db`UPDATE communications SET delivery_status = ${outcome.delivery_status}, lease_until = NULL, updated_at = ${now}, version = version + 1,
      sent_at = ${outcome.delivery_status === 'sent' ? now : null}, last_error = ${outcome.delivery_status === 'sent' ? null : outcome.attempt.response},
      next_attempt_at = ${outcome.next_attempt_at ?? row.next_attempt_at}, file_path = ${outcome.file_path ?? row.file_path}
    WHERE id = ${row.id} AND delivery_status = 'sending' AND claimed_by = ${worker} RETURNING id`
  if (!updated) return false
  await insertAttempt(db, row, { ...outcome.attempt, transport: row.transport ?? 'smtp' }, now)
  return true
}

async function insertAttempt(db: Db, row: Pick<MessageRow, 'id' | 'tenant_id' | 'environment_id'>, a: Omit<AttemptRow, 'id' | 'communication_id' | 'attempted_at'>, at: Date): Promise<void> {
  await db`INSERT INTO communication_attempts (id, communication_id, tenant_id, environment_id, attempted_at, transport, outcome, response_code, response)
    VALUES (${newId('catt')}, ${row.id}, ${row.tenant_id}, ${row.environment_id}, ${at}, ${a.transport}, ${a.outcome}, ${a.response_code}, ${a.response})`
}

/**
 * Claims whose process stopped (lease past): a file send is idempotent (the same file is written again), so it is
 * due again; an SMTP send may have been delivered before the stop, so it becomes unknown and is never resent.
 */
export async function expireClaims(db: Db, now: Date): Promise<{ retried: number; unknown: number }> {
  const retried = await db`UPDATE communications SET delivery_status = 'retrying', lease_until = NULL, next_attempt_at = ${now}, updated_at = ${now}, version = version + 1
    WHERE delivery_status = 'sending' AND lease_until < ${now} AND transport = 'file' RETURNING id`
  const unknown = await db`UPDATE communications SET delivery_status = 'unknown', lease_until = NULL, updated_at = ${now}, version = version + 1,
      last_error = 'the sender stopped after its SMTP claim and before recording the outcome: it may have been delivered (look for its Message-ID at the server); it is not resent'
    WHERE delivery_status = 'sending' AND lease_until < ${now} AND transport <> 'file' RETURNING id, tenant_id, environment_id`
  for (const row of unknown) await insertAttempt(db, row as MessageRow, { transport: 'smtp', outcome: 'unknown', response_code: null, response: 'claim expired without an outcome' }, now)
  return { retried: retried.length, unknown: unknown.length }
}

export async function dueMessages(db: Db, now: Date, limit: number): Promise<MessageRow[]> {
  const rows = await db`SELECT * FROM communications WHERE delivery_status IN ('pending', 'retrying') AND next_attempt_at <= ${now}
    ORDER BY next_attempt_at, id LIMIT ${limit}`
  return rows.map((r) => decodeRow<MessageRow>(MESSAGES, r))
}

export async function attemptsOf(db: Db, scope: Scope, ids: string[]): Promise<AttemptRow[]> {
  return (await db`SELECT id, communication_id, attempted_at, transport, outcome, response_code, response FROM communication_attempts
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND communication_id = ANY(${ids}::text[])
    ORDER BY attempted_at, id`) as unknown as AttemptRow[]
}

export interface Candidate {
  tenant_id: string
  environment_id: string
  kind: 'invoice' | 'credit_note' | 'payment_receipt'
  id: string
}

/**
 * Finalized invoices, finalized credit notes and succeeded payments since `since` with no message yet, in
 * environments whose settings do not turn their kind off (no settings: every kind on).
 */
export async function unsentRecords(db: Db, since: Date, limit: number): Promise<Candidate[]> {
  const on = (kind: string) => db`COALESCE((SELECT (s.auto_send ->> ${kind})::boolean FROM communication_settings s
    WHERE s.tenant_id = r.tenant_id AND s.environment_id = r.environment_id), true)`
  const none = (key: string) => db`NOT EXISTS (SELECT 1 FROM communications m WHERE m.tenant_id = r.tenant_id AND m.environment_id = r.environment_id AND m.source_key = ${key} || r.id)`
  return (await db`
    SELECT * FROM (
      SELECT r.tenant_id, r.environment_id, 'invoice' AS kind, r.id, r.finalized_at AS at FROM invoices r
       WHERE r.invoice_status = 'FINALIZED' AND r.status = 'published' AND r.finalized_at >= ${since} AND ${on('invoice')} AND ${none('invoice:')}
      UNION ALL
      SELECT r.tenant_id, r.environment_id, 'credit_note', r.id, r.finalized_at FROM credit_notes r
       WHERE r.credit_note_status = 'FINALIZED' AND r.status = 'published' AND r.finalized_at >= ${since} AND ${on('credit_note')} AND ${none('credit_note:')}
      UNION ALL
      SELECT r.tenant_id, r.environment_id, 'payment_receipt', r.id, r.succeeded_at FROM payments r
       WHERE r.payment_status = 'SUCCEEDED' AND r.status = 'published' AND r.payment_method_type <> 'CREDITS' AND r.succeeded_at >= ${since}
         AND ${on('payment_receipt')} AND ${none('payment:')}
    ) c ORDER BY at, id LIMIT ${limit}`) as unknown as Candidate[]
}
