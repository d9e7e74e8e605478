// Credit grants: credits a plan or a subscription gives every period (or once). The scheduled job
// (processCreditGrants) writes one application per grant, subscription and period, as
// core/credits/grants.ts lists them (rule 14: a past start gives one per elapsed period, in order), then
// applies each in its own transaction, its credits landing in the paying customer's wallet through the
// wallets service. The unique key per period and the wallet transaction's idempotency key make it
// exactly-once whatever reruns, races or crashes.
import { dueApplications } from '../../../core/credits/grants.ts'
import { AppError, notFound, validationError } from '../../../core/errors.ts'
import { parseDecimal, type Decimal } from '../../../core/money.ts'
import { periodBoundary, type BillingPeriod } from '../../../core/periods.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findRecords, insertRecord, insertRecords, listRecords, publishedIn, requireRecord, updateRecord, updateRecords, type Audit } from '../../../infra/records.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { requireOffering } from '../../catalog/offerings/kinds.ts'
import { copyWithOfferings } from '../../catalog/offerings/service.ts'
import { getCustomer } from '../../customers/service.ts'
import { customersInReach, inReach } from '../../customers/reach.ts'
import { auditOf, everyItem, referenced, systemActor, transaction } from '../../records/service.ts'
import { findSubscriptions, listSubscriptions, requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import { grantCredits, prepareGrants, type GrantBatch } from '../wallets/service.ts'
import * as store from './store.ts'


export const FILTERS = store.FILTERS
export const APPLICATION_FILTERS = store.APPLICATION_FILTERS

export interface CreateCreditGrantInput {
  name: string
  scope: 'PLAN' | 'SUBSCRIPTION'
  plan_id?: string
  subscription_id?: string
  credits: string
  cadence: 'ONETIME' | 'RECURRING'
  period?: BillingPeriod
  period_count?: number
  expiration_type?: 'NEVER' | 'DURATION' | 'BILLING_CYCLE'
  expiration_duration?: number
  expiration_duration_unit?: 'DAY' | 'WEEK' | 'MONTH' | 'YEAR'
  priority?: number
  conversion_rate?: string
  topup_conversion_rate?: string
  credit_grant_anchor?: string
  start_date?: string
  end_date?: string
  metadata?: Record<string, string>
}

export interface UpdateCreditGrantInput {
  name?: string
  metadata?: Record<string, string>
  version?: number
}

function positive(value: string, field: string): Decimal {
  const d = parseDecimal(value)
  if (!d.gt(0)) throw validationError(field, 'must be greater than 0')
  return d
}

const date = (value: string | undefined): Date | null => (value === undefined ? null : new Date(value))

/** The request's terms, checked field by field (the reference system's rules: a PLAN grant starts with each subscription). */
function termsOf(input: CreateCreditGrantInput) {
  const plan = input.scope === 'PLAN'
  if (plan && !input.plan_id) throw validationError('plan_id', 'is required for a PLAN grant')
  if (!plan && !input.subscription_id) throw validationError('subscription_id', 'is required for a SUBSCRIPTION grant')
  if (plan && input.subscription_id) throw validationError('subscription_id', 'is only for SUBSCRIPTION grants')
  for (const field of ['start_date', 'end_date', 'credit_grant_anchor'] as const) {
    if (plan && input[field] !== undefined) throw validationError(field, 'is only for SUBSCRIPTION grants: a PLAN grant starts with each subscription')
  }
  if (!plan && !input.start_date) throw validationError('start_date', 'is required for a SUBSCRIPTION grant')
  const [start, end, anchor] = [date(input.start_date), date(input.end_date), date(input.credit_grant_anchor)]
  if (start && end && end <= start) throw validationError('end_date', 'must be after start_date')
  if (start && anchor && anchor < start) throw validationError('credit_grant_anchor', 'must not be before start_date')
  const recurring = input.cadence === 'RECURRING'
  if (recurring && !input.period) throw validationError('period', 'is required for a RECURRING grant')
  if (!recurring && (input.period !== undefined || input.period_count !== undefined)) throw validationError(input.period !== undefined ? 'period' : 'period_count', 'is only for RECURRING grants')
  const expiration = input.expiration_type ?? 'NEVER'
  const duration = expiration === 'DURATION'
  if (duration && input.expiration_duration === undefined) throw validationError('expiration_duration', 'is required when expiration_type is DURATION')
  if (duration && input.expiration_duration_unit === undefined) throw validationError('expiration_duration_unit', 'is required when expiration_type is DURATION')
  if (!duration && (input.expiration_duration !== undefined || input.expiration_duration_unit !== undefined)) throw validationError('expiration_type', 'must be DURATION to give expiration_duration')
  if (expiration === 'BILLING_CYCLE' && !recurring) throw validationError('expiration_type', 'BILLING_CYCLE needs a RECURRING grant: a ONETIME grant has no billing cycle')
  return {
    name: input.name,
    scope: input.scope,
    plan_id: input.plan_id ?? null,
    subscription_id: input.subscription_id ?? null,
    credits: positive(input.credits, 'credits'),
    cadence: input.cadence,
    period: input.period ?? null,
    period_count: recurring ? (input.period_count ?? 1) : null,
    expiration_type: expiration,
    expiration_duration: input.expiration_duration ?? null,
    expiration_duration_unit: input.expiration_duration_unit ?? null,
    priority: input.priority ?? null,
    conversion_rate: input.conversion_rate === undefined ? null : positive(input.conversion_rate, 'conversion_rate'),
    topup_conversion_rate: input.topup_conversion_rate === undefined ? null : positive(input.topup_conversion_rate, 'topup_conversion_rate'),
    credit_grant_anchor: anchor,
    start_date: start,
    end_date: end,
    metadata: input.metadata ?? {},
  }
}

export async function createCreditGrant(deps: Deps, actor: Actor, input: CreateCreditGrantInput): Promise<store.GrantRow> {
  const terms = termsOf(input)
  if (terms.plan_id) await referenced('plan_id', requireOffering(deps.sql, actor, 'PLAN', terms.plan_id))
  if (terms.subscription_id) {
    const sub = await referenced('subscription_id', requireSubscription(deps.sql, actor, terms.subscription_id))
    if (sub.subscription_status === 'cancelled') throw validationError('subscription_id', `subscription ${sub.id} is cancelled`)
  }
  return insertRecord<store.GrantRow>(deps.sql, store.GRANTS, actor, auditOf(deps, actor), terms)
}

export const getCreditGrant = (deps: Deps, actor: Actor, id: string): Promise<store.GrantRow> => requireRecord<store.GrantRow>(deps.sql, store.GRANTS, actor, id)

export async function listCreditGrants(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.GrantRow>> {
  const { rows, total } = await listRecords<store.GrantRow>(deps.sql, store.GRANTS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(rows, total, params)
}

/** The published PLAN grants of a plan, oldest first: what GET /v1/plans/{id} expands as credit_grants. */
function listPlanCreditGrants(deps: Deps, scope: Scope, planId: string): Promise<store.GrantRow[]> {
  return planCreditGrants(deps.sql, scope, [planId])
}

/** The same for several plans in one query, in the caller's transaction if it has one. */
async function planCreditGrants(db: Db, scope: Scope, planIds: string[]): Promise<store.GrantRow[]> {
  return (await publishedIn<store.GrantRow>(db, store.GRANTS, scope, 'plan_id', planIds)).filter((g) => g.scope === 'PLAN')
}

/** Plan views with their published PLAN grants as `credit_grants`: a plan's view is the catalog's, its grants are ours. */
export async function withCreditGrants<P extends { id: string }>(db: Db, scope: Scope, plans: P[]): Promise<(P & { credit_grants: store.GrantRow[] })[]> {
  const grants = await planCreditGrants(db, scope, plans.map((p) => p.id))
  return plans.map((plan) => ({ ...plan, credit_grants: grants.filter((g) => g.plan_id === plan.id) }))
}

// A cloned plan gets copies of the plan's credit grants, in the clone's transaction.
copyWithOfferings(async (tx, actor, audit, kind, fromId, toId) => {
  if (kind.entityType !== 'PLAN') return
  const grants = await planCreditGrants(tx, actor, [fromId])
  const copies = grants.map(({ id: _id, tenant_id: _t, environment_id: _e, created_at: _ca, created_by: _cb, updated_at: _ua, updated_by: _ub, version: _v, status: _s, ...terms }) => ({ ...terms, plan_id: toId }))
  await insertRecords(tx, store.GRANTS, actor, audit, copies)
})

/** Subscription views with the grants that give them credits as `credit_grants`: their plan's and their own (SUBSCRIPTION scope). */
export async function withSubscriptionCreditGrants<S extends { id: string; plan_id: string }>(db: Db, scope: Scope, subs: S[]): Promise<(S & { credit_grants: store.GrantRow[] })[]> {
  const planGrants = await planCreditGrants(db, scope, [...new Set(subs.map((s) => s.plan_id))])
  const own = (await publishedIn<store.GrantRow>(db, store.GRANTS, scope, 'subscription_id', subs.map((s) => s.id))).filter((g) => g.scope === 'SUBSCRIPTION')
  return subs.map((sub) => ({ ...sub, credit_grants: [...planGrants.filter((g) => g.plan_id === sub.plan_id), ...own.filter((g) => g.subscription_id === sub.id)] }))
}

/** GET /v1/plans/{id}/creditgrants. */
export async function listGrantsOfPlan(deps: Deps, actor: Actor, planId: string): Promise<Page<store.GrantRow>> {
  await requireOffering(deps.sql, actor, 'PLAN', planId, { anyStatus: true })
  const items = await listPlanCreditGrants(deps, actor, planId)
  return page(items, items.length, { limit: items.length, offset: 0 })
}

/** Only the name and metadata change: applications already made keep the terms they were made with. */
export async function updateCreditGrant(deps: Deps, actor: Actor, id: string, input: UpdateCreditGrantInput): Promise<store.GrantRow> {
  const { version, ...fields } = input
  return updateRecord<store.GrantRow>(deps.sql, store.GRANTS, actor, id, fields, { version, audit: auditOf(deps, actor) })
}

/** Soft delete; applications not applied yet are cancelled with it, applied credits stay in the wallets. */
export async function deleteCreditGrant(deps: Deps, actor: Actor, id: string): Promise<store.GrantRow> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const row = await deleteRecord<store.GrantRow>(tx, store.GRANTS, actor, id, audit)
    await store.cancelWaiting(tx, actor, id, audit)
    return row
  })
}

// ---- applications -----------------------------------------------------------------------------------------

/** GET /v1/subscriptions/{id}/grants/upcoming: applications not applied yet (pending, or failed and retried), soonest first. */
export async function upcomingGrants(deps: Deps, actor: Actor, subscriptionId: string, { params }: ListRequest): Promise<Page<store.ApplicationRow>> {
  const sub = await requireSubscription(deps.sql, actor, subscriptionId)
  const where = [deps.sql`subscription_id = ${sub.id}`, deps.sql`application_status IN ('pending', 'failed')`]
  // A cancelled subscription has nothing upcoming after its end; the job marks those skipped when they come due.
  if (sub.cancelled_at) where.push(deps.sql`scheduled_for < ${sub.cancelled_at}`)
  const { rows, total } = await listRecords<store.ApplicationRow>(deps.sql, store.APPLICATIONS, actor, { ...params, sort: 'scheduled_for', order: 'asc' }, where)
  return page(rows, total, params)
}

/** GET /v1/customers/{id}/grants/upcoming: the same over every subscription of the customer, soonest first. */
export async function customerUpcomingGrants(deps: Deps, actor: Actor, customerId: string, { params }: ListRequest): Promise<Page<store.ApplicationRow>> {
  const customer = await getCustomer(deps, actor, customerId)
  const where = [deps.sql`application_status IN ('pending', 'failed')`, store.ofCustomerUncancelled(deps.sql, actor, customer.id)]
  const { rows, total } = await listRecords<store.ApplicationRow>(deps.sql, store.APPLICATIONS, actor, { ...params, sort: 'scheduled_for', order: 'asc' }, where)
  return page(rows, total, params)
}

export async function listGrantApplications(deps: Deps, actor: Actor, grantId: string, { params, filters }: ListRequest): Promise<Page<store.ApplicationRow>> {
  await getCreditGrant(deps, actor, grantId)
  const where = [deps.sql`credit_grant_id = ${grantId}`, ...filterConditions(deps.sql, store.APPLICATION_FILTERS, filters)]
  const { rows, total } = await listRecords<store.ApplicationRow>(deps.sql, store.APPLICATIONS, actor, params, where)
  return page(rows, total, params)
}

// ---- the job ----------------------------------------------------------------------------------------------

/** A failed application is tried again on later runs, this many times in all. */
const MAX_ATTEMPTS = 5
const BATCH = 200
const LIVE = ['not_started', 'trialing', 'active', 'incomplete']

const scopeOf = (row: { tenant_id: string; environment_id: string }): Scope => ({ tenantId: row.tenant_id, environmentId: row.environment_id })
/**
 * Applications applied in one transaction: on embedded PGlite every request's query waits for the open transaction
 * on its one connection, so batches there are small (as the billing run's).
 */
const batchSize = (deps: Deps): number => (deps.engines.postgres === 'pglite' ? 25 : 200)

/** Applications grouped by scope, each group in the due order. */
function byScope(apps: store.ApplicationRow[]): { scope: Scope; apps: store.ApplicationRow[] }[] {
  const groups = new Map<string, { scope: Scope; apps: store.ApplicationRow[] }>()
  for (const a of apps) {
    const key = `${a.tenant_id}/${a.environment_id}`
    if (!groups.has(key)) groups.set(key, { scope: scopeOf(a), apps: [] })
    groups.get(key)!.apps.push(a)
  }
  return [...groups.values()]
}

/** The subscriptions a grant gives credits to: its own, or every live one on its plan (inherited children included). */
async function subscriptionsOf(deps: Deps, grant: store.GrantRow): Promise<SubscriptionRow[]> {
  const scope = scopeOf(grant)
  if (grant.scope === 'SUBSCRIPTION') return [await requireSubscription(deps.sql, scope, grant.subscription_id!)]
  const filters = { plan_ids: [grant.plan_id!], subscription_status: LIVE }
  return everyItem((params) => listSubscriptions(deps, systemActor(scope), { params, filters }))
}

/**
 * Writes the applications of one grant for its subscriptions: for each, every one due by `now` (the missed periods
 * of a past start included, rule 14) and the next one ahead, so it shows as upcoming. Continues from the last period
 * written, so a rerun computes little and inserts nothing; two statements a page of subscriptions, not two each
 * (the job runs every minute over every grant).
 */
async function schedule(deps: Deps, grant: store.GrantRow, subs: SubscriptionRow[], now: Date, audit: Audit): Promise<number> {
  const live = subs.filter((sub) => sub.subscription_status !== 'cancelled')
  // Far enough for the next period whatever month lengths do; a ONETIME grant is due once, whenever.
  const horizon = grant.cadence === 'RECURRING' ? periodBoundary(now, grant.period!, grant.period_count ?? 1, 2) : new Date('9999-01-01T00:00:00Z')
  let inserted = 0
  for (let i = 0; i < live.length; i += BATCH) {
    const page = live.slice(i, i + BATCH)
    const lasts = await store.lastPeriodStarts(deps.sql, grant.id, page.map((sub) => sub.id))
    const rows = page.flatMap((sub) => {
      // A plan's grant gives credits from when the subscription joined the plan (a plan change), not from its start.
      const member = grant.scope === 'PLAN' && sub.plan_start_date ? { ...sub, start_date: sub.plan_start_date } : sub
      const all = dueApplications(grant, member, horizon, { since: lasts.get(sub.id) })
      const next = all.find((a) => a.scheduled_for > now)
      return [...all.filter((a) => a.scheduled_for <= now), ...(next ? [next] : [])]
    })
    inserted += await store.insertApplications(deps.sql, scopeOf(grant), audit, rows)
  }
  return inserted
}

/** Whose wallet a subscription's credits go to: the customer its invoices go to. */
async function payerOf(tx: Tx, scope: Scope, sub: SubscriptionRow): Promise<string> {
  if (sub.invoicing_customer_id) return sub.invoicing_customer_id
  if (sub.subscription_type === 'inherited' && sub.parent_subscription_id) return (await requireSubscription(tx, scope, sub.parent_subscription_id)).customer_id
  return sub.customer_id
}

type Outcome = 'applied' | 'skipped' | 'cancelled' | 'waiting' | 'failed'

/** What applying an application decided, and the columns that record it (none while it waits). */
interface Decided {
  outcome: Outcome
  fields?: Record<string, unknown>
}

/**
 * Applies one application locked by the caller's transaction, with its grant and subscription as read in it; the
 * caller records the decision in the same transaction.
 */
async function applyLocked(deps: Deps, tx: Tx, audit: Audit, waiting: store.ApplicationRow, grant: store.GrantRow, sub: SubscriptionRow | undefined, batch?: GrantBatch): Promise<Decided> {
  const scope = scopeOf(waiting)
  if (grant.status !== 'published') return { outcome: 'cancelled', fields: { application_status: 'cancelled' } }
  if (!sub) throw notFound('subscription', waiting.subscription_id)
  const status_at = { subscription_status_at_application: sub.subscription_status }
  // A plan's grant for a period after the subscription left the plan (a plan change) gives nothing.
  if (grant.scope === 'PLAN' && grant.plan_id !== sub.plan_id && sub.plan_start_date && sub.plan_start_date <= waiting.scheduled_for) {
    return { outcome: 'cancelled', fields: { application_status: 'cancelled', ...status_at } }
  }
  if (sub.cancelled_at && sub.cancelled_at <= waiting.scheduled_for) return { outcome: 'skipped', fields: { application_status: 'skipped', ...status_at } }
  // An incomplete subscription grants nothing until it is activated: the application waits.
  if (sub.subscription_status === 'incomplete') return { outcome: 'waiting' }
  const credited = await grantCredits(deps, tx, scope, audit, {
    customer_id: await payerOf(tx, scope, sub),
    currency: sub.currency,
    conversion_rate: grant.conversion_rate,
    credits: waiting.credits,
    expiry_date: waiting.expiry_date,
    priority: waiting.priority,
    reference_id: waiting.id,
    idempotency_key: waiting.idempotency_key,
    description: `${grant.name}: ${waiting.application_reason} for ${waiting.period_start.toISOString()}`,
  }, batch)
  return { outcome: 'applied', fields: { application_status: 'applied', applied_at: audit.at, wallet_transaction_id: credited.id, failure_reason: null, ...status_at } }
}

/** Records decisions on locked applications of one scope, in one statement. */
async function record(tx: Tx, scope: Scope, audit: Audit, decided: { id: string; fields?: Record<string, unknown> }[]): Promise<void> {
  await updateRecords(tx, store.APPLICATIONS, scope, audit, decided.flatMap(({ id, fields }) => (fields ? [{ id, fields }] : [])))
}

/** Applies one application in its own transaction; a failure is recorded in another, to be retried. */
async function apply(deps: Deps, app: store.ApplicationRow, audit: Audit): Promise<Outcome> {
  const scope = scopeOf(app)
  try {
    return await transaction(deps, async (tx): Promise<Outcome> => {
      const waiting = await store.lockWaiting(tx, app.id)
      if (!waiting) return 'waiting' // applied or taken by another run meanwhile
      const grant = await requireRecord<store.GrantRow>(tx, store.GRANTS, scope, app.credit_grant_id)
      const [sub] = await findSubscriptions(tx, scope, [app.subscription_id])
      const decided = await applyLocked(deps, tx, audit, waiting, grant, sub)
      await record(tx, scope, audit, [{ id: waiting.id, fields: decided.fields }])
      return decided.outcome
    })
  } catch (err) {
    if (!(err instanceof AppError)) deps.logger.error({ err, credit_grant_application: app.id }, 'credit grant application failed')
    await transaction(deps, (tx) => updateRecord(tx, store.APPLICATIONS, scope, app.id, { application_status: 'failed', failure_reason: (err as Error).message, retry_count: app.retry_count + 1 }, { audit }))
    return 'failed'
  }
}

/**
 * Applies a batch of one scope's applications in one transaction, in order, their grants and subscriptions read once;
 * when any fails, the batch rolls back and each is applied on its own (apply), which records the failure.
 */
async function applyBatch(deps: Deps, scope: Scope, apps: store.ApplicationRow[], audit: Audit): Promise<Outcome[]> {
  const together = await transaction(deps, async (tx) => {
    const waiting = await store.lockWaitingMany(tx, apps.map((a) => a.id))
    const grants = new Map((await findRecords<store.GrantRow>(tx, store.GRANTS, scope, apps.map((a) => a.credit_grant_id))).map((g) => [g.id, g]))
    const subs = new Map((await findSubscriptions(tx, scope, apps.map((a) => a.subscription_id))).map((s) => [s.id, s]))
    // The wallets the credits go to, as far as the subscriptions name them (an inherited child's parent pays: read then).
    const payers = apps.flatMap((a) => {
      const sub = subs.get(a.subscription_id)
      return sub && waiting.has(a.id) ? [{ customer_id: sub.invoicing_customer_id ?? sub.customer_id, currency: sub.currency, idempotency_key: waiting.get(a.id)!.idempotency_key }] : []
    })
    const batch = await prepareGrants(tx, scope, payers)
    const decided: (Decided & { id: string })[] = []
    for (const app of apps) {
      const locked = waiting.get(app.id)
      const grant = grants.get(app.credit_grant_id)
      if (locked && !grant) throw notFound('credit grant', app.credit_grant_id)
      // Not locked: applied or taken by another run meanwhile.
      decided.push({ id: app.id, ...(locked ? await applyLocked(deps, tx, audit, locked, grant!, subs.get(app.subscription_id), batch) : { outcome: 'waiting' as const }) })
    }
    await record(tx, scope, audit, decided)
    return decided.map((d) => d.outcome)
  }).catch(() => undefined)
  if (together) return together
  const outcomes: Outcome[] = []
  for (const app of apps) outcomes.push(await apply(deps, app, audit))
  return outcomes
}

export interface GrantJobSummary {
  scheduled: number
  applied: number
  skipped: number
  cancelled: number
  failed: number
}

/** The credit-grant-applications job: schedule every grant's due periods, then apply what is due, oldest first. */
export async function processCreditGrants(deps: Deps, now: Date = deps.clock.now()): Promise<GrantJobSummary> {
  const audit: Audit = { by: 'system', at: now }
  const summary: GrantJobSummary = { scheduled: 0, applied: 0, skipped: 0, cancelled: 0, failed: 0 }
  for (let after = ''; ; ) {
    const grants = await store.grantsAfter(deps.sql, after, BATCH)
    for (const grant of grants) {
      const subs = await subscriptionsOf(deps, grant)
      // Another time line's subscriptions (a test clock's, or the wall clock's) are scheduled on theirs.
      const reached = await customersInReach(deps.sql, deps, subs.map((s) => s.customer_id))
      summary.scheduled += await schedule(deps, grant, subs.filter((sub) => reached.has(sub.customer_id)), now, audit)
    }
    if (grants.length < BATCH) break
    after = grants[grants.length - 1].id
  }
  for (;;) {
    const due = await store.applicationsDue(deps.sql, now, MAX_ATTEMPTS, BATCH, inReach(deps.sql, deps, 'subscriptions.customer_id'))
    let moved = 0
    for (const { scope, apps } of byScope(due)) {
      for (let i = 0; i < apps.length; i += batchSize(deps)) {
        for (const outcome of await applyBatch(deps, scope, apps.slice(i, i + batchSize(deps)), audit)) {
          if (outcome !== 'waiting') {
            summary[outcome]++
            moved++
          }
        }
      }
    }
    // A full batch of applications that all wait (incomplete subscriptions) would come back the same.
    if (due.length < BATCH || moved === 0) return summary
  }
}
