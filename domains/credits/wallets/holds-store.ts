// The SQL of credit holds (wallet_holds). Every change of a hold runs under its wallet's row lock
// (store.lockWallet), so the sum of active holds read there is the one the change is judged against.
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, type RecordRow, type RecordTable } from '../../../infra/records.ts'
import { D, type Decimal } from '../../../core/money.ts'

export const HOLDS: RecordTable = { name: 'wallet_holds', noun: 'wallet_hold', prefix: 'hold', decimals: ['amount', 'settled_amount', 'quantity'] }

export type HoldStatus = 'active' | 'settled' | 'released' | 'expired'

export interface HoldRow extends RecordRow {
  wallet_id: string
  customer_id: string
  hold_status: HoldStatus
  amount: Decimal
  settled_amount: Decimal | null
  feature_id: string | null
  quantity: Decimal | null
  expires_at: Date
  transaction_id: string | null
  closed_at: Date | null
  idempotency_key: string | null
}

const decode = (row: Record<string, unknown>) => decodeRow<HoldRow>(HOLDS, row as never)

/** Credits held on each wallet at `at`: active holds not past their expiry. Wallets holding nothing are absent. */
export async function heldByWallet(db: Db, walletIds: string[], at: Date): Promise<Map<string, Decimal>> {
  if (walletIds.length === 0) return new Map()
  const rows = await db<{ wallet_id: string; held: string }[]>`SELECT wallet_id, sum(amount) AS held FROM wallet_holds
    WHERE wallet_id = ANY(${walletIds}::text[]) AND hold_status = 'active' AND expires_at > ${at}
    GROUP BY wallet_id`
  return new Map(rows.map((r) => [r.wallet_id, new D(r.held)]))
}

export const heldOn = async (db: Db, walletId: string, at: Date): Promise<Decimal> => (await heldByWallet(db, [walletId], at)).get(walletId) ?? new D(0)

export async function findHold(db: Db, scope: Scope, id: string): Promise<HoldRow | undefined> {
  const [row] = await db`SELECT * FROM wallet_holds WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row ? decode(row) : undefined
}

/**
 * What a batch of hold changes reads under the wallet's lock, in one statement: the credits held now (active
 * holds not past their expiry), and the wallet's holds among `ids` or made with one of `keys`.
 */
export async function holdsForBatch(db: Db, walletId: string, at: Date, ids: string[], keys: string[]): Promise<{ held: Decimal; named: HoldRow[] }> {
  const rows = await db`SELECT h.*, NULL::numeric AS held FROM wallet_holds h
      WHERE h.wallet_id = ${walletId} AND (h.id = ANY(${ids}::text[]) OR h.idempotency_key = ANY(${keys}::text[]))
    UNION ALL
    SELECT (NULL::wallet_holds).*, coalesce(sum(amount), 0) FROM wallet_holds
      WHERE wallet_id = ${walletId} AND hold_status = 'active' AND expires_at > ${at}`
  const total = rows.find((r) => r.id === null)!
  return { held: new D(total.held as string), named: rows.filter((r) => r.id !== null).map(({ held: _held, ...row }) => decode(row)) }
}

export interface HoldClosing {
  id: string
  to: 'settled' | 'released'
  settled_amount: Decimal | null
  transaction_id: string | null
  by: string
}

/**
 * Closes active holds in one statement (the caller holds their wallet's lock, so each is still active); the rows as
 * closed. The id list lets the planner find them by key: joined to the recordset alone it scanned every hold.
 */
export async function closeHolds(db: Db, closings: HoldClosing[], at: Date): Promise<HoldRow[]> {
  if (closings.length === 0) return []
  const values = closings.map((c) => ({ id: c.id, to: c.to, settled: c.settled_amount?.toFixed() ?? null, tx: c.transaction_id, by: c.by }))
  const rows = await db`UPDATE wallet_holds h SET hold_status = v.to, settled_amount = v.settled::numeric, transaction_id = v.tx,
      closed_at = ${at}, updated_at = ${at}, updated_by = v.by, version = h.version + 1
    FROM jsonb_to_recordset(${db.json(values as never)}) AS v(id text, "to" text, settled text, tx text, by text)
    WHERE h.id = ANY(${closings.map((c) => c.id)}::text[]) AND h.id = v.id AND h.hold_status = 'active' RETURNING h.*`
  return rows.map(decode)
}

/** Drops closed holds' dead row versions and index entries (embedded Postgres has no autovacuum). Outside a transaction. */
export async function vacuumHolds(db: Db): Promise<void> {
  await db`VACUUM wallet_holds`
}

/** Marks a wallet's holds expired by `at`; returns them. */
export async function expireHoldsOf(db: Db, walletId: string, at: Date): Promise<HoldRow[]> {
  const rows = await db`UPDATE wallet_holds SET hold_status = 'expired', closed_at = expires_at, updated_at = ${at}, updated_by = 'system', version = version + 1
    WHERE wallet_id = ${walletId} AND hold_status = 'active' AND expires_at <= ${at} RETURNING *`
  return rows.map(decode)
}

/** Wallets of every scope with active holds expired by `at`. */
export async function walletsWithExpiredHolds(db: Db, at: Date, limit: number): Promise<{ id: string; tenant_id: string; environment_id: string }[]> {
  return db<{ id: string; tenant_id: string; environment_id: string }[]>`SELECT DISTINCT wallet_id AS id, tenant_id, environment_id FROM wallet_holds
    WHERE hold_status = 'active' AND expires_at <= ${at} LIMIT ${limit}`
}

/** A wallet's holds, newest first, optionally of one status (an active hold past its expiry counts as expired). */
export async function holdsOf(db: Db, scope: Scope, walletId: string, status: HoldStatus | undefined, at: Date, limit: number, offset: number): Promise<{ rows: HoldRow[]; total: number }> {
  const where = db`tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND wallet_id = ${walletId}
    ${status === undefined ? db`` : status === 'active' ? db`AND hold_status = 'active' AND expires_at > ${at}`
      : status === 'expired' ? db`AND (hold_status = 'expired' OR (hold_status = 'active' AND expires_at <= ${at}))` : db`AND hold_status = ${status}`}`
  const rows = await db`SELECT *, count(*) OVER () AS total FROM wallet_holds WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`
  return { rows: rows.map(({ total: _total, ...row }) => decode(row)), total: Number(rows[0]?.total ?? 0) }
}
