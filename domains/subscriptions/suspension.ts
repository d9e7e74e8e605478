// Entitlements suspended until an invoice is paid (dunning's final action): the subscription names the invoice,
// the entitlement lookup leaves such a subscription out (entitlements-store.ts), and paying the invoice lifts it.
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'

/** Suspends a subscription's entitlements until `invoiceId` is paid; false when it was already suspended. */
export async function suspendEntitlements(db: Db, scope: Scope, subscriptionId: string, invoiceId: string, at: Date): Promise<boolean> {
  const rows = await db`UPDATE subscriptions SET entitlements_suspended_by = ${invoiceId}, updated_at = ${at}, version = version + 1
    WHERE id = ${subscriptionId} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND entitlements_suspended_by IS NULL
    RETURNING id`
  return rows.length > 0
}

/** Lifts the suspensions an invoice caused; the subscriptions lifted. */
export async function liftSuspensions(db: Db, scope: Scope, invoiceId: string, at: Date): Promise<string[]> {
  const rows = await db`UPDATE subscriptions SET entitlements_suspended_by = NULL, updated_at = ${at}, version = version + 1
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND entitlements_suspended_by = ${invoiceId}
    RETURNING id`
  return rows.map((r) => r.id as string)
}
