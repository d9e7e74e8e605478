// Group commit of a wallet's hold changes: creates, settles and releases of one wallet that arrive while a batch
// of that wallet is in flight run together as the next batch, in one transaction under the wallet's row lock.
// The balance, the held sum, the named holds and idempotency keys are read once; core/credits/hold-batch.ts
// decides each request in arrival order as if it ran alone; the new holds, the debits, the closings and their
// events are written as multi-row statements. Each caller gets its own answer (its own 4xx included). Two API
// processes each batch their own requests and the row lock serializes their batches, so nothing is promised
// twice. Auto top-up and balance alerts are judged once per batch, on the balance the batch leaves.
import { decideHoldBatch, type HoldChange, type HoldDecision } from '../../../core/credits/hold-batch.ts'
import { balanceOf } from '../../../core/credits/ledger.ts'
import { invalidOperation, notFound } from '../../../core/errors.ts'
import { GroupCommit, type Outcome } from '../../../core/group-commit.ts'
import { newId } from '../../../core/ids.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { recordEvents, type OutboundEvent } from '../../../infra/outbox.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { insertRecords } from '../../../infra/records.ts'
import { transaction } from '../../records/service.ts'
import { closeHolds, HOLDS, holdsForBatch, vacuumHolds, type HoldClosing, type HoldRow } from './holds-store.ts'
import { holdEvent, holdView, type HoldView } from './holds-view.ts'
import { appendDebits, balanceAt, creditsOf } from './ledger.ts'
import * as store from './store.ts'
import { settle } from './watch.ts'

export type HoldJob = { by: string } & (
  | { kind: 'create'; amount: Decimal; feature_id: string | null; quantity: Decimal | null; seconds: number; idempotency_key: string | null; metadata: Record<string, string> }
  | { kind: 'settle'; hold: string; credits: Decimal; allow_overage: boolean }
  | { kind: 'release'; hold: string }
)

const ok = (value: HoldView): Outcome<HoldView> => ({ ok: true, value })
const fail = (error: unknown): Outcome<HoldView> => ({ ok: false, error })

/** 400 for a hold or debit the available balance cannot cover, naming what is available and held. */
export function insufficientAvailable(available: Decimal, held: Decimal, amount: Decimal) {
  return invalidOperation(`insufficient available balance: ${available.toFixed()} credits available (${held.toFixed()} held), ${amount.toFixed()} requested`, {
    available: available.toFixed(),
    available_balance: available.toFixed(),
    held_balance: held.toFixed(),
    requested: amount.toFixed(),
  })
}

function refusal(job: HoldJob, d: HoldDecision): unknown {
  const id = job.kind === 'create' ? '' : job.hold
  switch (d.kind) {
    case 'insufficient':
      return insufficientAvailable(d.available, d.held, (job as { amount: Decimal }).amount)
    case 'not_found':
      return notFound('wallet hold', id)
    case 'not_active':
      return invalidOperation(`wallet hold ${id} is ${d.status}`, { hold_id: id, status: d.status })
    case 'exceeds': {
      const { credits } = job as { credits: Decimal }
      const why = d.reason === 'exceeds_hold' ? `is more than the held credits (allow_overage to take more)` : `is more than the wallet can cover`
      return invalidOperation(`settling ${credits.toFixed()} credits ${why}: at most ${d.most.toFixed()}`, { field: 'amount', requested: credits.toFixed(), most: d.most.toFixed() })
    }
    case 'uncovered':
      return invalidOperation('insufficient credits in wallet', { requested: (job as { credits: Decimal }).credits.toFixed(), available: d.available.toFixed() })
    default:
      throw new Error(`not a refusal: ${d.kind}`)
  }
}

/** Rows grouped by who asked (insertRecords stamps one author a statement), first author first. */
function byAuthor<T extends { by: string }>(items: T[]): T[][] {
  const groups = new Map<string, T[]>()
  for (const item of items) groups.set(item.by, [...(groups.get(item.by) ?? []), item])
  return [...groups.values()]
}

async function runBatch(deps: Deps, tx: Tx, scope: Scope, walletId: string, jobs: HoldJob[]): Promise<Outcome<HoldView>[]> {
  const at = deps.clock.now()
  const wallet = await store.lockWallet(tx, scope, walletId)
  if (!wallet) return jobs.map((j) => fail(j.kind === 'create' ? notFound('wallet', walletId) : notFound('wallet hold', j.hold)))
  // A closed wallet takes no new hold; its holds can still be settled or released, as before batching.
  const closed = wallet.wallet_status !== 'active'
  const live = jobs.filter((j) => !(closed && j.kind === 'create'))
  const holdIds = [...new Set(live.flatMap((j) => (j.kind === 'create' ? [] : [j.hold])))]
  const keys = [...new Set(live.flatMap((j) => (j.kind === 'create' && j.idempotency_key ? [j.idempotency_key] : [])))]
  const debiting = live.some((j) => j.kind === 'settle' && j.credits.gt(0))
  // The reads after the lock, sent together (postgres pipelines them on the transaction's connection).
  const [read, { held, named }] = await Promise.all([
    debiting ? creditsOf(tx, wallet.id).then((credits) => ({ credits, balance: balanceOf(credits, at) })) : balanceAt(tx, wallet.id, at).then((balance) => ({ credits: undefined, balance })),
    holdsForBatch(tx, wallet.id, at, holdIds, keys),
  ])
  const { balance } = read
  let credits = read.credits
  const stored = new Map(named.filter((r) => holdIds.includes(r.id)).map((r) => [r.id, r]))
  const keyed = new Map(named.filter((r) => r.idempotency_key !== null && keys.includes(r.idempotency_key)).map((r) => [r.idempotency_key!, r]))

  const changes = live.map(
    (j): HoldChange =>
      j.kind === 'create'
        ? { kind: 'create', amount: j.amount, key: j.idempotency_key }
        : j.kind === 'settle'
          ? { kind: 'settle', hold: j.hold, credits: j.credits, allow_overage: j.allow_overage }
          : { kind: 'release', hold: j.hold },
  )
  const verdict = decideHoldBatch(
    { balance: balance.credit_balance, held, holds: new Map([...stored].map(([id, r]) => [id, { amount: r.amount, status: r.hold_status, expires_at: r.expires_at }])), keys: new Set(keyed.keys()), at },
    changes,
  )

  // The new holds, with their ids given here so that each request finds its own.
  const madeId = live.map((j, i) => (j.kind === 'create' && verdict.decisions[i].kind === 'make' ? newId(HOLDS.prefix) : undefined))
  const made = live.flatMap((j, i) =>
    j.kind === 'create' && madeId[i]
      ? [{ by: j.by, fields: { id: madeId[i], wallet_id: wallet.id, customer_id: wallet.customer_id, amount: j.amount, feature_id: j.feature_id, quantity: j.quantity, expires_at: new Date(at.getTime() + j.seconds * 1000), idempotency_key: j.idempotency_key, metadata: j.metadata } }]
      : [],
  )
  // Every write below is sent at once: each row's id is given here, so none waits for another's answer.
  const inserted = Promise.all(byAuthor(made).map((group) => insertRecords<HoldRow>(tx, HOLDS, scope, { by: group[0].by, at }, group.map((m) => m.fields))))

  // Settlements' debits, in order, each after the ones before it.
  const settling = live.flatMap((j, i) => {
    const d = verdict.decisions[i]
    return j.kind === 'settle' && d.kind === 'close' && d.debit.gt(0) ? [{ by: j.by, hold: j.hold, debit: d.debit, id: newId(store.TRANSACTIONS.prefix) }] : []
  })
  const debitOf = new Map(settling.map((s) => [s.hold, s.id]))
  const debits = byAuthor(settling).map((group) => {
    const inputs = group.map((s) => ({ id: s.id, credits: s.debit, reason: 'MANUAL_DEBIT' as const, reference_type: 'WALLET_HOLD' as const, reference_id: s.hold, description: `settles hold ${s.hold}` }))
    const planned = appendDebits(tx, scope, { by: group[0].by, at }, wallet, credits!, inputs)
    credits = planned.credits
    return planned.written
  })

  const closings = live.flatMap((j, i): HoldClosing[] => {
    const d = verdict.decisions[i]
    if (j.kind === 'create' || d.kind !== 'close') return []
    return [{ id: j.hold, to: j.kind === 'settle' ? 'settled' : 'released', settled_amount: j.kind === 'settle' ? d.debit : null, transaction_id: debitOf.get(j.hold) ?? null, by: j.by }]
  })
  const [insertedRows, written, closedList] = await Promise.all([inserted, Promise.all(debits), closeHolds(tx, closings, at)])
  const rows = new Map(insertedRows.flat().map((r) => [r.id, r]))
  for (const row of rows.values()) if (row.idempotency_key) keyed.set(row.idempotency_key, row)
  const closedRows = new Map(closedList.map((r) => [r.id, r]))

  const events: OutboundEvent[] = [...rows.values()].map((r) => holdEvent('created', r, at))
  for (const w of written) events.push(...w.events)
  for (const c of closings) events.push(holdEvent(c.to, closedRows.get(c.id)!, at))
  await recordEvents(tx, scope, events)
  if (events.length > 0) {
    const after = credits ? balanceOf(credits, at) : balance
    await settle(deps, tx, scope, { by: live.at(-1)!.by, at }, wallet, { balance: after, held: verdict.held })
  }

  let next = 0
  return jobs.map((j) => {
    if (closed && j.kind === 'create') return fail(invalidOperation(`wallet ${walletId} is ${wallet.wallet_status}`, { wallet_id: walletId, wallet_status: wallet.wallet_status }))
    const i = next++
    const d = verdict.decisions[i]
    if (d.kind === 'make') return ok(holdView(rows.get(madeId[i]!)!, at))
    if (d.kind === 'replay') return ok(holdView(keyed.get(d.key)!, at))
    if (j.kind !== 'create' && (d.kind === 'close' || d.kind === 'answer')) return ok(holdView(closedRows.get(j.hold) ?? stored.get(j.hold)!, at))
    return fail(refusal(j, d))
  })
}

/**
 * Holds closed between two VACUUMs of wallet_holds on embedded Postgres, which has no autovacuum: every closed hold
 * leaves a dead row and index entries that the batches' statements on wallet_holds walk again (in-process, a pair cost
 * 954 → 1,650 µs over 9,600 pairs without; 1,066 → 895 with one VACUUM, ~3 ms, at 4,800).
 */
const VACUUM_EVERY = 2_000
const closedSince = new WeakMap<Deps, number>()

/** Counts `closed` holds and, on embedded Postgres, vacuums wallet_holds once enough were closed, after the batch's transaction. */
function vacuumWhenDue(deps: Deps, closed: number): void {
  if (deps.engines.postgres !== 'pglite' || closed === 0) return
  const count = (closedSince.get(deps) ?? 0) + closed
  if (count < VACUUM_EVERY) return void closedSince.set(deps, count)
  // Reset at once so that one VACUUM is queued at a time; the next batches' closings count towards the next one.
  closedSince.set(deps, 0)
  vacuumHolds(deps.sql).catch((error: unknown) => deps.logger.warn({ err: error }, 'vacuum of wallet_holds failed'))
}

/** How long a busy wallet's next batch waits at most for the callers just answered (bench/spend.bench.ts: waiting for them all beat a fixed 1 ms; 6 ms beat 3, 10 no better). */
const GATHER_MS = 6
const batches = new WeakMap<Deps, GroupCommit<HoldJob, HoldView>>()

/** Runs a hold change of the wallet in the wallet's next batch; answers it as if it ran alone. */
export function inHoldBatch(deps: Deps, scope: Scope, walletId: string, job: HoldJob): Promise<HoldView> {
  let group = batches.get(deps)
  if (!group) {
    group = new GroupCommit<HoldJob, HoldView>((key, jobs) => {
      const [tenantId, environmentId, id] = key.split('\n')
      return transaction(deps, (tx) => runBatch(deps, tx, { tenantId, environmentId }, id, jobs)).then((outcomes) => {
        vacuumWhenDue(deps, jobs.filter((j, i) => j.kind !== 'create' && outcomes[i].ok).length)
        return outcomes
      })
    }, { gatherMs: GATHER_MS })
    batches.set(deps, group)
  }
  return group.submit([scope.tenantId, scope.environmentId, walletId].join('\n'), job)
}
