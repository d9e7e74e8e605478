// The Kafka consumer's events, held where they are decoded: on the decode thread (chunk-thread.ts), which
// reads a fetch's records, cuts them into chunks, and for each chunk answers what the consumer's thread
// needs to look ids up and to insert: the ids to look up, then the chunk's insert text as bytes. The events
// never leave this thread; only ids, scopes, stored keys, meters and bytes cross (structured-cloning the
// events would cost as much as decoding them again).
import { Buffer } from 'node:buffer'
import { Worker } from 'node:worker_threads'
import { decodeRecord, MAX_ID_LENGTH, receiptOf, type UsageEvent } from '../core/events.ts'
import type { MeterRules } from '../core/meters.ts'
import type { Scope } from '../core/scope.ts'
import { candidatesOf, freshOf, RecordedDrops, outcomesOf, partToken, refusedRow, scopesOf, type BatchCounts, type BatchRows, type Candidates, type Rejected, type RefusedRow } from './outcomes.ts'
import { batchLine, EventIds, keyOf, keysOf, lookupOf, lookupOfIds, type DropRow, type EventKey, type KeyLookup, type Outcome, type StoredRow } from './store.ts'

/**
 * Record values as one buffer of their own (so it moves to the decode thread): record i is bytes
 * [starts[i], ends[i]). Values that are views of one buffer (kafkajs slices a fetch's response) are copied
 * in one piece, the bytes between them included; others (decompressed batches) one by one.
 */
export function packRecords(values: readonly (Uint8Array | null | undefined)[]): [Uint8Array, Uint32Array, Uint32Array] {
  const starts = new Uint32Array(values.length)
  const ends = new Uint32Array(values.length)
  const shared = values.find((v) => v)?.buffer
  let low = Number.POSITIVE_INFINITY
  let high = 0
  for (const v of values) {
    if (!v) continue
    if (v.buffer !== shared) {
      low = Number.NaN
      break
    }
    low = Math.min(low, v.byteOffset)
    high = Math.max(high, v.byteOffset + v.byteLength)
  }
  if (shared && !Number.isNaN(low)) {
    const bytes = new Uint8Array(shared.slice(low, high))
    values.forEach((v, i) => {
      starts[i] = v ? v.byteOffset - low : 0
      ends[i] = v ? starts[i] + v.byteLength : 0
    })
    return [bytes, starts, ends]
  }
  let total = 0
  for (const v of values) total += v?.length ?? 0
  const bytes = new Uint8Array(total)
  let at = 0
  values.forEach((v, i) => {
    starts[i] = at
    if (v) {
      bytes.set(v, at)
      at += v.length
    }
    ends[i] = at
  })
  return [bytes, starts, ends]
}

/** A record element that is not an event, for the dead-letter topic. */
export interface Dead {
  /** The record's index in the fetch. */
  record: number
  /** The element as text. */
  value: string
  reason: string
}

/** A chunk as the consumer sees it: whole records up to `maxRows` events, and its elements that are not events. */
export interface DecodedChunk {
  id: number
  /** Index in the fetch of its first record, and one past its last. */
  from: number
  to: number
  dead: Dead[]
  /** The scopes of its events: the meters to resolve them against. */
  scopes: Scope[]
}

export interface ChunkRows {
  /** The insert text, one line a row. */
  rows: Uint8Array
  size: number
  result: BatchCounts
}

/** A fetch's record values: record i is bytes [starts[i], ends[i]). */
interface Fetch {
  bytes: Buffer
  starts: Uint32Array
  ends: Uint32Array
  maxRows: number
  /** The next record to decode. */
  next: number
}

interface Chunk {
  fetch: Fetch
  from: number
  to: number
  /** Decoded until prepared; the rare steps after (a refused row, preparing again) decode the records again. */
  decoded?: Decoded
  candidates?: Candidates
  /** Once prepared: the ids it stores, which rows are which events, and what their lines were built with. */
  keys?: EventIds
  fresh?: Uint32Array
  duplicates?: Uint32Array
  /** The rejected records it records (indexes in the decoded chunk's), when a replay left some out; else all. */
  rejected?: Uint32Array
  rules?: Map<string, MeterRules[]>
  expiresAt?: string
}

interface Decoded {
  events: UsageEvent[]
  rejected: Rejected[]
  dead: Dead[]
  to: number
}

/** Instants a DateTime64 column holds (to 2200, as intake accepts). */
const LATEST = Date.UTC(2200, 0, 1)

/** Dead elements that still name their event are also recorded in ClickHouse, so the lookup can say why. */
function rejectedOf(dead: { raw: unknown; reason: string }[]): Rejected[] {
  return dead.flatMap(({ raw, reason }) => {
    const r = (raw ?? {}) as Record<string, unknown>
    const [id, tenantId, environmentId] = [r.id, r.tenant_id, r.environment_id]
    if (typeof id !== 'string' || typeof tenantId !== 'string' || typeof environmentId !== 'string') return []
    // Its customer, event name and instants too where the record has them readable: the reconciliation report counts
    // rejections by customer, name and time.
    const text = (v: unknown) => (typeof v === 'string' && v.length <= MAX_ID_LENGTH ? v : undefined)
    const instant = (v: unknown) => {
      const at = typeof v === 'string' || typeof v === 'number' ? new Date(v) : undefined
      return at && at.getTime() >= 0 && at.getTime() < LATEST ? at : undefined
    }
    const event = { id, tenantId, environmentId, externalCustomerId: text(r.external_customer_id), eventName: text(r.event_name), timestamp: instant(r.timestamp), receivedAt: instant(r.received_at), receipt: receiptOf(r.receipt) }
    return [{ event, reason }]
  })
}

/** Records from `from` on, up to `to` or until `maxRows` events and dead elements. */
function decodeRecords({ bytes, starts, ends }: Fetch, from: number, to: number, maxRows: number): Decoded {
  const events: UsageEvent[] = []
  const dead: (Dead & { raw: unknown })[] = []
  let i = from
  for (; i < to && events.length + dead.length < maxRows; i++) {
    const text = bytes.toString('utf8', starts[i], ends[i])
    if (text === '') {
      dead.push({ record: i, value: '', raw: undefined, reason: 'empty record' })
      continue
    }
    for (const d of decodeRecord(text)) {
      if (d.ok) events.push(d.event)
      else dead.push({ record: i, value: typeof d.raw === 'string' ? d.raw : JSON.stringify(d.raw), raw: d.raw, reason: d.reason })
    }
  }
  return { events, rejected: rejectedOf(dead), dead: dead.map(({ record, value, reason }) => ({ record, value, reason })), to: i }
}

/**
 * The indexes in `events` of `some` of them: fresh events keep the chunk's order, so one walk finds them
 * without a map of every event; duplicates can come out of order (repeats within the chunk, then ids found
 * stored), and are then mapped.
 */
function indexesOf(events: UsageEvent[], some: UsageEvent[]): Uint32Array {
  const out = new Uint32Array(some.length)
  let j = 0
  for (let i = 0; i < events.length && j < some.length; i++) if (events[i] === some[j]) out[j++] = i
  if (j === some.length) return out
  const at = new Map(some.map((e, k) => [e, k]))
  events.forEach((e, i) => {
    const k = at.get(e)
    if (k !== undefined) out[k] = i
  })
  return out
}

/**
 * The insert text of outcomes as UTF-8, each line written into one growing buffer as it is built: neither
 * the lines nor their joined text are held at once (they outlived young-generation collections, which then
 * copied tens of megabytes a chunk). The buffer is the answer's own, so it moves to the consumer's thread.
 */
function encodeRows(outcomes: Outcome[], expiresAt: string): Uint8Array {
  let buf = Buffer.allocUnsafeSlow(outcomes.length * 256 + 1024)
  let at = 0
  for (let i = 0; i < outcomes.length; i++) {
    const line = batchLine(outcomes[i], expiresAt)
    // A UTF-16 unit takes at most 3 bytes of UTF-8.
    if (buf.length - at < line.length * 3 + 1) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(buf.length * 2, at + line.length * 3 + 1))
      buf.copy(bigger, 0, 0, at)
      buf = bigger
    }
    if (i > 0) buf[at++] = 10
    at += buf.write(line, at, 'utf8')
  }
  return new Uint8Array(buf.buffer.slice(0, at))
}

/**
 * The decode thread's state: fetches and their chunks by id, from decode to release. A chunk's events live
 * only from its decoding to its insert text (events kept across a chunk's insert cost more garbage
 * collection than decoding the rare chunk again). Every method is synchronous.
 */
export class ChunkStore {
  private readonly fetches = new Map<number, Fetch>()
  private readonly chunks = new Map<number, Chunk>()
  private lastId = 0

  private chunk(id: number): Chunk {
    const c = this.chunks.get(id)
    if (!c) throw new Error(`chunk ${id} is not held`)
    return c
  }

  /** Holds a fetch's records (packRecords), to be cut into chunks of up to `maxRows` events. */
  fetch(bytes: Uint8Array, starts: Uint32Array, ends: Uint32Array, maxRows: number): number {
    const id = ++this.lastId
    this.fetches.set(id, { bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), starts, ends, maxRows, next: 0 })
    return id
  }

  /** The fetch's next chunk: whole records up to its maxRows events; undefined (and the fetch let go) after the last. */
  next(fetchId: number): DecodedChunk | undefined {
    const fetch = this.fetches.get(fetchId)
    if (!fetch) throw new Error(`fetch ${fetchId} is not held`)
    if (fetch.next >= fetch.ends.length) {
      // Its chunks still hold its bytes.
      this.fetches.delete(fetchId)
      return undefined
    }
    const from = fetch.next
    const decoded = decodeRecords(fetch, from, fetch.ends.length, fetch.maxRows)
    fetch.next = decoded.to
    const id = ++this.lastId
    this.chunks.set(id, { fetch, from, to: decoded.to, decoded })
    return { id, from, to: decoded.to, dead: decoded.dead, scopes: scopesOf(decoded.events) }
  }

  private decoded(c: Chunk): Decoded {
    c.decoded ??= decodeRecords(c.fetch, c.from, c.to, Number.POSITIVE_INFINITY)
    return c.decoded
  }

  /**
   * The ids of a chunk to look up: the first of each id, none of them in the `pending` chunks (whose inserts
   * are in flight: their ids count as stored). Every call starts the chunk's classification afresh.
   */
  candidates(id: number, pending: readonly number[] = []): KeyLookup {
    const c = this.chunk(id)
    c.candidates = candidatesOf(this.decoded(c).events, pending.flatMap((p) => this.chunks.get(p)?.keys ?? []))
    return lookupOf(c.candidates.candidates)
  }

  /**
   * The chunk's outcomes once the lookup found `stored` (with each stored copy's receipt instant), as insert text;
   * `recorded`: the drops an earlier read of the same records recorded (asked for when this read finds itself a replay).
   */
  prepare(id: number, stored: StoredRow[], rules: Map<string, MeterRules[]>, expiresAt: string, recorded?: DropRow[]): ChunkRows {
    const c = this.chunk(id)
    if (!c.candidates) throw new Error(`chunk ${id} was not looked up`)
    const { events, rejected } = this.decoded(c)
    const known = recorded && new RecordedDrops(recorded)
    const { fresh, keys, duplicates, replayed } = freshOf(c.candidates, keysOf(stored), known)
    // Rejections an earlier read of the same records recorded.
    const kept = known ? rejected.filter((r) => !known.has(r.event, 'rejected')) : rejected
    const prepared = outcomesOf(fresh, keys, duplicates, kept, rules)
    Object.assign(c, {
      decoded: undefined,
      candidates: undefined,
      keys,
      fresh: indexesOf(events, fresh),
      duplicates: indexesOf(events, duplicates),
      rejected: kept === rejected ? undefined : Uint32Array.from(kept, (r) => rejected.indexOf(r)),
      rules,
      expiresAt,
    })
    return { rows: encodeRows(prepared.outcomes, expiresAt), size: prepared.outcomes.length, result: { ...prepared.result, replayed: replayed + rejected.length - kept.length } }
  }

  /**
   * The ids of the drops a looked-up chunk may record (its repeats, its candidates found `stored`, its rejections), to ask
   * which of them an earlier read of its records recorded; undefined when it has none. Before prepare, which it informs.
   */
  dropLookup(id: number, stored: StoredRow[]): KeyLookup | undefined {
    const c = this.chunk(id)
    if (!c.candidates) throw new Error(`chunk ${id} was not looked up`)
    const drops: EventKey[] = [...c.candidates.duplicates, ...this.decoded(c).rejected.map((r) => r.event)]
    if (stored.length > 0) {
      const { keys } = keysOf(stored)
      for (const e of c.candidates.candidates) if (keys.has(e)) drops.push(e)
    }
    if (drops.length === 0) return undefined
    return lookupOfIds({ tenants: [...new Set(drops.map((k) => k.tenantId))], envs: [...new Set(drops.map((k) => k.environmentId))] }, [...new Set(drops.map((k) => k.id))])
  }

  /** A prepared chunk's outcomes, from its records decoded again. */
  private outcomes(id: number): { outcomes: Outcome[]; expiresAt: string } {
    const c = this.chunk(id)
    if (!c.fresh || !c.duplicates || !c.keys || !c.rules || c.expiresAt === undefined) throw new Error(`chunk ${id} was not prepared`)
    const { events, rejected } = decodeRecords(c.fetch, c.from, c.to, Number.POSITIVE_INFINITY)
    const of = (indexes: Uint32Array) => Array.from(indexes, (i) => events[i])
    const kept = c.rejected ? Array.from(c.rejected, (i) => rejected[i]) : rejected
    return { outcomes: outcomesOf(of(c.fresh), c.keys, of(c.duplicates), kept, c.rules).outcomes, expiresAt: c.expiresAt }
  }

  partToken(id: number, token: string, from: number, to: number): string {
    return partToken(token, this.outcomes(id).outcomes.slice(from, to))
  }

  refused(id: number, i: number, reason: string): RefusedRow {
    const { outcomes, expiresAt } = this.outcomes(id)
    return refusedRow(outcomes[i], reason, expiresAt)
  }

  /** For each event, the index in the fetch of the chunk's record that holds it (events ClickHouse refused: rare). */
  recordsOf(id: number, events: EventKey[]): number[] {
    const { fetch, from, to } = this.chunk(id)
    const holders = new Map(events.map((e) => [keyOf(e), -1]))
    for (let i = from; i < to; i++) {
      for (const d of decodeRecord(fetch.bytes.toString('utf8', fetch.starts[i], fetch.ends[i]))) {
        if (d.ok && holders.get(keyOf(d.event)) === -1) holders.set(keyOf(d.event), i)
      }
    }
    return events.map((e) => holders.get(keyOf(e))!)
  }

  /** Lets a chunk or a fetch go (ids are unique across both). */
  release(id: number): void {
    this.chunks.delete(id)
    this.fetches.delete(id)
  }

  /** Chunks held: for tests, which check that every chunk is released. */
  held(): number {
    return this.chunks.size + this.fetches.size
  }
}

/** The ChunkStore's methods as a thread offers them: each answers asynchronously. */
export type ChunkCalls = { [K in keyof ChunkStore]: ChunkStore[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<R> : never }

/**
 * A prepared chunk's rows on the consumer's thread: the insert text as received, cut at newlines when a
 * refused row splits it (JSON escapes every newline inside a row); the rest is asked of the decode thread.
 */
export function chunkRows(calls: Pick<ChunkCalls, 'partToken' | 'refused'>, id: number, prepared: ChunkRows): BatchRows {
  let starts: number[] | undefined
  const start = (i: number): number => {
    if (!starts) {
      starts = [0]
      for (let at = prepared.rows.indexOf(10); at !== -1; at = prepared.rows.indexOf(10, at + 1)) starts.push(at + 1)
    }
    return starts[i]
  }
  const { rows, size } = prepared
  return {
    size,
    // Without the newline ending the part.
    text: (from, to) => (from === 0 && to === size ? rows : rows.subarray(start(from), to === size ? rows.length : start(to) - 1)),
    partToken: (token, from, to) => calls.partToken(id, token, from, to),
    refused: (i, reason) => calls.refused(id, i, reason),
  }
}

type Reply = { id: number; value?: unknown; error?: string }

export interface ChunkThread {
  calls: ChunkCalls
  /** Ends the thread; calls still waiting fail. */
  close(): Promise<void>
  /** Resolves when the thread has ended, for whatever reason. */
  exited: Promise<void>
}

/** Array buffers an argument or answer owns whole (a fetch's bytes, a chunk's text): moved, not copied. */
export function transferables(values: unknown[]): ArrayBuffer[] {
  const out: ArrayBuffer[] = []
  for (const v of values) {
    for (const x of v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) ? Object.values(v) : [v]) {
      if (ArrayBuffer.isView(x) && x.buffer instanceof ArrayBuffer && x.byteOffset === 0 && x.byteLength === x.buffer.byteLength) out.push(x.buffer)
    }
  }
  return out
}

/** Starts a decode thread (chunk-thread.ts) holding a ChunkStore. */
export function startChunkThread(): ChunkThread {
  const worker = new Worker(new URL('./chunk-thread.mjs', import.meta.url))
  const waiting = new Map<number, { resolve(v: unknown): void; reject(err: Error): void }>()
  let lastId = 0
  let gone: Error | undefined
  let failure: Error | undefined
  worker.on('error', (err) => void (failure = err))
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', (code) => {
      gone = new Error(`the aggregator's decode thread exited with code ${code}${failure ? `: ${failure.message}` : ''}`)
      for (const w of waiting.values()) w.reject(gone)
      waiting.clear()
      resolve()
    }),
  )
  worker.on('message', (m: Reply) => {
    const w = waiting.get(m.id)
    waiting.delete(m.id)
    if (m.error === undefined) w?.resolve(m.value)
    else w?.reject(new Error(m.error))
  })
  const call =
    (method: keyof ChunkStore) =>
    (...args: unknown[]): Promise<unknown> => {
      if (gone) return Promise.reject(gone)
      const id = ++lastId
      const answer = new Promise((resolve, reject) => waiting.set(id, { resolve, reject }))
      worker.postMessage({ id, method, args }, transferables(args))
      return answer
    }
  const methods: (keyof ChunkStore)[] = ['fetch', 'next', 'candidates', 'prepare', 'dropLookup', 'partToken', 'refused', 'recordsOf', 'release', 'held']
  return {
    calls: Object.fromEntries(methods.map((m) => [m, call(m)])) as ChunkCalls,
    close: async () => {
      await worker.terminate()
      await exited
    },
    exited,
  }
}
