// Plan changes, their schedules and plan sync: Flexprice's previewSubscriptionChange,
// executeSubscriptionChange, the subscription-schedule reads and cancel, and syncPlanPrices. The SDK's
// schedule paths repeat /v1 (its base address already ends in /v1), so they are mounted under both.
import { BILLING_PERIODS } from '../../core/periods.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { executePlanChange, previewPlanChange, type PlanChangeInput } from '../../domains/invoicing/changes/plan-change.ts'
import { executeReset, previewReset } from '../../domains/invoicing/changes/plan-change-reset.ts'
import { cancelSchedule, getSchedule, listSchedules, type ScheduleQuery } from '../../domains/invoicing/changes/schedules.ts'
import { getPlanSync, planSyncChanges, startPlanSync, type SyncInput } from '../../domains/invoicing/changes/plan-sync.ts'
import { filterSpec } from '../../infra/records.ts'
import { fromListQuery, listQuery, metadataSchema, versionField } from '../record-schema.ts'
import { defineRoute, type Route } from '../route.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }
const behaviors = ['create_prorations', 'always_invoice', 'none']

const changeBody: JsonSchema = {
  type: 'object',
  required: ['target_plan_id'],
  additionalProperties: false,
  properties: {
    target_plan_id: id,
    change_at: { type: 'string', enum: ['immediate', 'end_of_period'], description: 'default immediate' },
    proration_behavior: { type: 'string', enum: behaviors, description: "how an immediate change's proration is settled; default the subscription's" },
    billing_cadence: { type: 'string', enum: ['RECURRING'] },
    billing_cycle: { type: 'string', enum: ['anniversary', 'calendar'], description: "must be the subscription's: a change keeps the cycle" },
    billing_period: { type: 'string', enum: [...BILLING_PERIODS], description: "must be the subscription's" },
    billing_period_count: { type: 'integer', minimum: 1, maximum: 100, description: "must be the subscription's" },
    billing_cycle_anchor: { type: 'string', enum: ['unchanged', 'now'], description: 'now: cancel and replace the subscription by one on the target plan anchored at the change (Flexprice re-anchors); default unchanged' },
    metadata: metadataSchema,
    version: versionField,
  },
}

const scheduleQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    subscription_id: id,
    pending_only: { type: 'boolean' },
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    offset: { type: 'integer', minimum: 0 },
  },
}

const cancelScheduleBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { schedule_id: id, subscription_id: id, schedule_type: { type: 'string', enum: ['plan_change', 'cancellation'] } },
}

const syncBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    change_at: { type: 'string', enum: ['immediate', 'end_of_period'], description: 'default end_of_period: from each subscription\'s next period, nothing prorated' },
    proration_behavior: { type: 'string', enum: ['create_prorations', 'none'], description: 'with change_at immediate: how the rest of the period is settled; default create_prorations' },
  },
}

/** The SDK's path (/v1 twice) and the one a curl user writes. */
const bothPrefixes = (path: string): string[] => [path, path.replace('/v1/', '/v1/v1/')]

export const planChangeRoutes: Route[] = [
  ...(['preview', 'execute'] as const).map((step) =>
    defineRoute<PlanChangeInput>({
      method: 'POST',
      path: `/v1/subscriptions/{id}/change/${step}`,
      tag: 'Subscriptions',
      summary:
        step === 'preview'
          ? 'Work out a plan change (upgrade, downgrade) and the proration it bills, changing nothing'
          : 'Change the plan now (prorated as proration_behavior says) or at the end of the period (a schedule); bumps the version',
      permission: step === 'preview' ? 'read' : 'write',
      body: changeBody,
      handler: ({ deps, actor, params, body }) => {
        const reset = body.billing_cycle_anchor === 'now'
        return (step === 'preview' ? (reset ? previewReset : previewPlanChange) : reset ? executeReset : executePlanChange)(deps, actor, params.id, body)
      },
    }),
  ),
  ...bothPrefixes('/v1/subscription-schedules').map((path) =>
    defineRoute<Record<string, never>, ScheduleQuery>({
      method: 'GET',
      path,
      tag: 'Subscriptions',
      summary: 'Plan changes scheduled for the end of a period: { schedules, count }, soonest first',
      permission: 'read',
      query: scheduleQuery,
      handler: ({ deps, actor, query }) => listSchedules(deps, actor, query),
    }),
  ),
  ...bothPrefixes('/v1/subscription-schedules/{id}').map((path) =>
    defineRoute({
      method: 'GET',
      path,
      tag: 'Subscriptions',
      summary: 'One subscription schedule',
      permission: 'read',
      handler: ({ deps, actor, params }) => getSchedule(deps, actor, params.id),
    }),
  ),
  ...bothPrefixes('/v1/subscriptions/{subscription_id}/schedules').map((path) =>
    defineRoute({
      method: 'GET',
      path,
      tag: 'Subscriptions',
      summary: "A subscription's schedules: { schedules, count }",
      permission: 'read',
      handler: ({ deps, actor, params }) => listSchedules(deps, actor, { subscription_id: params.subscription_id, limit: 1000 }),
    }),
  ),
  defineRoute<SyncInput>({
    method: 'POST',
    path: '/v1/plans/{id}/sync/subscriptions',
    tag: 'Plans',
    summary: "Move the plan's live subscriptions onto its current prices (a run the plan-sync job works through; answers the run with its progress)",
    permission: 'write',
    body: syncBody,
    handler: ({ deps, actor, params, body }) => startPlanSync(deps, actor, params.id, body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/plans/{id}/sync/subscriptions/{run_id}',
    tag: 'Plans',
    summary: 'A plan sync run with its progress (processed, moved, skipped, failed of total)',
    permission: 'read',
    handler: ({ deps, actor, params }) => getPlanSync(deps, actor, params.id, params.run_id),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/plans/{id}/sync/subscriptions/{run_id}/changes',
    tag: 'Plans',
    summary: "A plan sync run's audit: each subscription's outcome, the line items it ended and started",
    permission: 'read',
    query: listQuery(['created_at'], filterSpec({})),
    handler: ({ deps, actor, params, query }) => planSyncChanges(deps, actor, params.id, params.run_id, fromListQuery(query)),
  }),
  ...bothPrefixes('/v1/subscriptions/schedules/{schedule_id}/cancel').map((path) =>
    defineRoute<{ subscription_id?: string; schedule_type?: string }>({
      method: 'POST',
      path,
      tag: 'Subscriptions',
      summary: "Cancel a pending plan change: the old plan's line items keep running",
      permission: 'write',
      body: cancelScheduleBody,
      handler: ({ deps, actor, params, body }) => cancelSchedule(deps, actor, params.schedule_id, body),
    }),
  ),
]
