// SQL of meters and their backfill progress.
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { baseFilters, listRows, type RecordRow } from '../../../infra/records.ts'
import type { ListParams } from '../../../core/list.ts'

export interface AggregationJson {
  type: string
  field?: string
  multiplier?: string
  group_by?: string
  bucket_size?: string
  expression?: string
}

export interface MeterRow extends RecordRow {
  name: string
  event_name: string
  filters: { key: string; values: string[] }[]
  aggregation: AggregationJson
  reset_usage: 'BILLING_PERIOD' | 'NEVER'
  revision: number
  ready_revision: number
  revised_at: Date
}

export interface RevisionRow {
  meter_id: string
  revision: number
  filters: MeterRow['filters']
  status: 'pending' | 'running' | 'done' | 'failed'
  processed: string
  total: string | null
  error: string | null
  started_at: Date | null
  finished_at: Date | null
}

export async function insertMeter(
  db: Db,
  row: Pick<MeterRow, 'id' | 'tenant_id' | 'environment_id' | 'name' | 'event_name' | 'filters' | 'aggregation' | 'reset_usage' | 'metadata' | 'created_by'>,
  at: Date,
): Promise<MeterRow> {
  const [created] = await db<MeterRow[]>`INSERT INTO meters
      (id, tenant_id, environment_id, name, event_name, filters, aggregation, reset_usage, metadata, revised_at, created_at, created_by, updated_at, updated_by)
    VALUES (${row.id}, ${row.tenant_id}, ${row.environment_id}, ${row.name}, ${row.event_name}, ${db.json(row.filters as never)},
            ${db.json(row.aggregation as never)}, ${row.reset_usage}, ${db.json(row.metadata)}, ${at}, ${at}, ${row.created_by}, ${at}, ${row.created_by})
    RETURNING *`
  await db`INSERT INTO meter_revisions (meter_id, revision, filters) VALUES (${created.id}, ${created.revision}, ${db.json(created.filters as never)})`
  return created
}

export async function findMeter(db: Db, scope: Scope, id: string): Promise<MeterRow | undefined> {
  const [row] = await db<MeterRow[]>`SELECT * FROM meters
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row
}

export async function findMeters(db: Db, scope: Scope, ids: string[]): Promise<MeterRow[]> {
  return db<MeterRow[]>`SELECT * FROM meters
    WHERE id = ANY(${db.array(ids)}::text[]) AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
}

/** A meter with its current revision's backfill row, in one round trip (usage queries read this first). */
export async function findMeterWithRevision(db: Db, scope: Scope, id: string): Promise<{ meter: MeterRow; revision?: RevisionRow } | undefined> {
  const [row] = await db<(MeterRow & { rev: RevisionRow | null })[]>`SELECT m.*, to_jsonb(r) AS rev FROM meters m
    LEFT JOIN meter_revisions r ON r.meter_id = m.id AND r.revision = m.revision
    WHERE m.id = ${id} AND m.tenant_id = ${scope.tenantId} AND m.environment_id = ${scope.environmentId}`
  if (!row) return undefined
  const { rev, ...meter } = row
  return { meter: meter as MeterRow, revision: rev ?? undefined }
}

export async function listMeters(db: Db, scope: Scope, params: ListParams, eventName?: string): Promise<{ rows: MeterRow[]; total: number }> {
  const where = baseFilters(db, scope, params)
  if (eventName !== undefined) where.push(db`event_name = ${eventName}`)
  return listRows<MeterRow>(db, 'meters', where, params)
}

/** Name and filters; new filters start a new revision (and its backfill) in the same statement. */
export async function updateMeter(
  db: Db,
  scope: Scope,
  id: string,
  change: { name?: string; filters?: MeterRow['filters']; by: string; at: Date },
): Promise<MeterRow | undefined> {
  const revise = change.filters !== undefined
  const [row] = await db<MeterRow[]>`UPDATE meters SET
      name = COALESCE(${change.name ?? null}, name),
      filters = COALESCE(${change.filters === undefined ? null : db.json(change.filters as never)}, filters),
      revision = revision + ${revise ? 1 : 0},
      revised_at = CASE WHEN ${revise} THEN ${change.at} ELSE revised_at END,
      version = version + 1, updated_at = ${change.at}, updated_by = ${change.by}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    RETURNING *`
  if (revise && row) {
    await db`INSERT INTO meter_revisions (meter_id, revision, filters) VALUES (${row.id}, ${row.revision}, ${db.json(row.filters as never)})`
  }
  return row
}

export async function setStatus(db: Db, scope: Scope, id: string, status: string, by: string, at: Date): Promise<MeterRow | undefined> {
  const [row] = await db<MeterRow[]>`UPDATE meters SET status = ${status}, version = version + 1, updated_at = ${at}, updated_by = ${by}
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    RETURNING *`
  return row
}

/** Published meters of the given scopes: one query per batch of events. */
export async function publishedMeters(db: Db, scopes: Scope[]): Promise<MeterRow[]> {
  if (scopes.length === 0) return []
  const tenants = scopes.map((s) => s.tenantId)
  const envs = scopes.map((s) => s.environmentId)
  return db<MeterRow[]>`SELECT m.* FROM meters m
    JOIN unnest(${db.array(tenants)}::text[], ${db.array(envs)}::text[]) AS s(tenant_id, environment_id)
      ON m.tenant_id = s.tenant_id AND m.environment_id = s.environment_id
    WHERE m.status = 'published'`
}

export async function revisionsOf(db: Db, ids: string[]): Promise<RevisionRow[]> {
  if (ids.length === 0) return []
  return db<RevisionRow[]>`SELECT * FROM meter_revisions WHERE meter_id = ANY(${db.array(ids)}::text[])`
}

/** Meter revisions whose backfill has not finished and whose change is at least `settledBefore` old. */
export async function pendingRevisions(db: Db, settledBefore: Date): Promise<MeterRow[]> {
  return db<MeterRow[]>`SELECT * FROM meters WHERE ready_revision < revision AND revised_at <= ${settledBefore}
    AND status = 'published' ORDER BY revised_at`
}

export async function recordProgress(
  db: Db,
  meterId: string,
  revision: number,
  p: { status: RevisionRow['status']; processed: number; total?: number; error?: string; at: Date },
): Promise<void> {
  await db`UPDATE meter_revisions SET status = ${p.status}, processed = ${p.processed}, total = COALESCE(${p.total ?? null}, total),
      error = ${p.error ?? null},
      started_at = COALESCE(started_at, ${p.at}),
      finished_at = ${p.status === 'done' || p.status === 'failed' ? p.at : null}
    WHERE meter_id = ${meterId} AND revision = ${revision}`
}

/** The revision is complete: queries switch to it unless a newer one already did. */
export async function markReady(db: Db, meterId: string, revision: number): Promise<void> {
  await db`UPDATE meters SET ready_revision = GREATEST(ready_revision, ${revision}) WHERE id = ${meterId}`
}
