// Flexprice's alert log (POST /v1/alerts/search) read from the outbox: every change of a wallet's balance alert
// (wallet.credit_balance.*, wallet.ongoing_balance.*) and of a feature's alert on a wallet
// (feature.wallet_balance.alert) is an event written in the transaction that changed the state
// (domains/credits/wallets/watch.ts), so the events are the log. Each entry carries the customer, wallet and
// feature as they were when the alert moved.
import { page, type ListParams, type Page } from '../../core/list.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import * as store from './store.ts'

export type AlertLogFilter = store.AlertEventFilter

interface AlertPayload {
  customer?: { id?: string } & Record<string, unknown>
  wallet?: { id?: string } & Record<string, unknown>
  feature?: { id?: string } & Record<string, unknown>
  alert?: { alert_settings?: unknown; alert_type?: string; credit_balance?: number; state?: string }
}

function entryOf(event: store.EventRow) {
  const p = event.payload as AlertPayload
  const onFeature = event.event_type === 'feature.wallet_balance.alert'
  return {
    id: event.id,
    tenant_id: event.tenant_id,
    environment_id: event.environment_id,
    entity_type: onFeature ? 'feature' : 'wallet',
    entity_id: onFeature ? (p.feature?.id ?? null) : event.entity_id,
    parent_entity_type: onFeature ? 'wallet' : null,
    parent_entity_id: onFeature ? event.entity_id : null,
    customer_id: p.customer?.id ?? null,
    alert_type: p.alert?.alert_type ?? null,
    alert_status: p.alert?.state ?? null,
    alert_info: { alert_settings: p.alert?.alert_settings ?? null, value_at_time: p.alert?.credit_balance ?? null, timestamp: event.created_at },
    customer: p.customer ?? null,
    wallet: p.wallet ?? null,
    feature: p.feature ?? null,
    status: 'published',
    created_at: event.created_at,
    updated_at: event.created_at,
    created_by: 'system',
    updated_by: 'system',
  }
}

export async function searchAlertLog(deps: Deps, actor: Actor, params: ListParams, filters: AlertLogFilter): Promise<Page<ReturnType<typeof entryOf>>> {
  const { rows, total } = await store.alertEvents(deps.sql, actor, { ...params, sort: 'created_at' }, filters)
  return page(rows.map(entryOf), total, params)
}
