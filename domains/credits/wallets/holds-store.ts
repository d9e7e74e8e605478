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

export async function findHoldByKey(db: Db, walletId: string, key: string): Promise<HoldRow | undefined> {
  const [row] = await db`SELECT * FROM wallet_holds WHERE wallet_id = ${walletId} AND idempotency_key = ${key}`
  return row ? decode(row) : undefined
}

/** Closes an active hold; undefined when it was no longer active (the caller holds the wallet lock, so it was not). */
export async function closeHold(
  db: Db,
  id: string,
  to: Exclude<HoldStatus, 'active'>,
  fields: { settled_amount?: Decimal; transaction_id?: string | null },
  audit: { by: string; at: Date },
): Promise<HoldRow | undefined> {
  const [row] = await db`UPDATE wallet_holds SET hold_status = ${to}, settled_amount = ${fields.settled_amount?.toFixed() ?? null},
      transaction_id = ${fields.transaction_id ?? null}, closed_at = ${audit.at}, updated_at = ${audit.at}, updated_by = ${audit.by}, version = version + 1
    WHERE id = ${id} AND hold_status = 'active' RETURNING *`
  return row ? decode(row) : undefined
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
