// The dedup filter: a first check of a chunk's ids, so the exact lookup in event_ids reads only the ids it may hold
// (duplicates, and ~0.5% of new ids) instead of the dedup window's ids for every chunk (docs/usage.md, "The dedup
// filter"). One blocked Bloom filter (core/bloom.ts, ~1.5–1.9 bytes an id) per partition of the event topic, held by
// the process that consumes the partition: the Kafka key keeps a customer on one partition, so a partition's ids are
// those of its customers, and N aggregators hold 1/N each. Direct mode's event log is one partition.
// ClickHouse stays the source of truth: a filter is rebuilt from event_ids (ClickHouse computes the same hash,
// core/dedup-hash.ts) or loaded from its snapshot on disk and topped up with the ids stored since; a miss is trusted,
// a hit is looked up exactly. Every id of a chunk is added before its insert begins, so a miss always means "not
// stored": by this process, by the filter's source, or (the barrier) by a process that held the partition before
// and whose insert the server may still be running.
import { mkdir, open, rename, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { BlockedBloom } from '../core/bloom.ts'
import { ID_HASH_SQL } from '../core/dedup-hash.ts'
import { eventKey, keyPartition } from '../core/partition.ts'
import type { ClickHouse } from '../infra/clickhouse.ts'
import type { Deps } from '../infra/deps.ts'
import { idsOf, lookupOfIds, storedRows, tsvField, type KeyLookup, type StoredRow } from './store.ts'

/** A filter is sized for its ids times this at a build: room to grow before the next. */
const HEADROOM = 1.25
/** The smallest filter: 256 Ki ids, 384 KiB. */
const MIN_CAPACITY = 256 * 1024
/** A filter older than this is rebuilt (ids expired from event_ids leave it), and a snapshot older than this is not used. */
const REBUILD_AFTER_MS = 7 * 86_400_000
/** Snapshots of the partitions held are written this often, and when a partition is revoked or the process stops. */
const SNAPSHOT_EVERY_MS = 5 * 60_000
/** A top-up reads the ids stored since a snapshot less this: the server's clock against a statement's start. */
const TOP_UP_MARGIN_S = 600
/** Lookups whose hashes a rebuild adds again: more than the chunks a pipeline holds in flight (3). */
const RECENT_LOOKUPS = 16
/** Snapshots are read in pieces of this size (one read takes at most 2 GiB). */
const SNAPSHOT_IO_BYTES = 64 * 1024 * 1024
/** A build waits this long for the other partitions of the same assignment to ask for theirs. */
const BUILD_GATHER_MS = 50
/** How often the barrier asks whether the inserts begun before it have ended. */
const INSERTS_POLL_MS = 500

/** The lookup of one partition's chunks. */
export interface PartitionLookup {
  /** The stored keys of a lookup (with their receipt instants): the filter's hits looked up exactly, its misses trusted. */
  stored(lookup: KeyLookup): Promise<StoredRow[]>
}

export interface DedupFilter {
  /** The partition's lookup; its filter is loaded at the first lookup (which waits for it). */
  of(partition: number): PartitionLookup
  /**
   * The partitions this process holds now: the others' filters are written to their snapshots and let go. `missedSince`
   * (ms): this process may have missed generations of the group since then (another member may have held its partitions
   * meanwhile): the filters kept add the ids stored since, and the others are let go without a snapshot.
   */
  assign(partitions: number[], options?: { missedSince?: number }): Promise<void>
  /** Partitions held and their filters' sizes, for health and metrics. */
  held(): { partition: number; ids: number; bytes: number; state: 'loading' | 'ready' | 'failed' }[]
  /** Writes the snapshots of the partitions held and ends the background work. */
  stop(): Promise<void>
}

export interface FilterSource {
  /** Names the snapshots' directory: `kafka-<topic>` or `event-log`. */
  name: string
  /** The event topic's partitions now (1 for the event log): a filter holds the ids of the customers its key gives it. */
  partitions(): Promise<number>
}

interface Held {
  partition: number
  /** The topic's partitions the filter was built for. */
  count: number
  bloom?: BlockedBloom
  ready: Promise<void>
  failed?: Error
  /** When (ClickHouse's clock, ms) the filter's source was read: its age decides a rebuild. */
  builtAt: number
  /** Hashes added while a rebuild reads: added to the new filter before it replaces this one. */
  pending?: Uint32Array[]
  /** The hashes of the last lookups: chunks whose inserts may not have landed when a rebuild reads event_ids. */
  recent: Uint32Array[]
  rebuilding?: Promise<void>
}

/** The file of a partition's snapshot: a JSON header line, then the filter's words. */
interface SnapshotHeader {
  partition: number
  count: number
  added: number
  builtAt: number
  takenAt: number
  words: number
}

/** ClickHouse's clock, in ms: the tops-ups compare it with the rows' inserted_at, written by the server. */
async function chNow(ch: ClickHouse): Promise<number> {
  const rs = await ch.reader.query({ query: 'SELECT toString(toUnixTimestamp64Milli(now64(3))) AS t', format: 'JSONEachRow' })
  return Number((await rs.json<{ t: string }>())[0].t)
}

/** Rows a read hands over at a time. */
const ROWS_AT_ONCE = 65_536

/**
 * Reads a statement's rows of `columns` UInt32 columns as they come, as RowBinary (4 bytes each, little-endian: ~10 ns
 * a row, where parsing them as CSV text cost ~310), handed to `rows` in batches (flat, `columns` a row; the array is
 * reused): the filter adds a batch at once (BlockedBloom.addAll).
 */
async function readRows(ch: ClickHouse, query: string, columns: number, signal: AbortSignal, rows: (values: Uint32Array) => void): Promise<void> {
  const batch = new Uint32Array(ROWS_AT_ONCE * columns)
  let n = 0
  /** The bytes of a value cut by the end of a piece. */
  const carry = new Uint8Array(4)
  let carried = 0
  const put = (value: number): void => {
    batch[n++] = value
    if (n === batch.length) {
      rows(batch)
      n = 0
    }
  }
  for await (const piece of ch.streamCsv({ query, signal, format: 'RowBinary' })) {
    const b = piece.bytes
    let i = 0
    if (carried > 0) {
      while (carried < 4 && i < b.length) carry[carried++] = b[i++]
      if (carried < 4) continue
      put(carry[0] | (carry[1] << 8) | (carry[2] << 16) | ((carry[3] << 24) >>> 0))
      carried = 0
    }
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength)
    for (; i + 4 <= b.length; i += 4) put(view.getUint32(i, true))
    while (i < b.length) carry[carried++] = b[i++]
  }
  if (n > 0) rows(batch.subarray(0, n))
}

/** Adds a batch of (hi, lo) rows to a filter. */
const adder = (bloom: BlockedBloom) => (values: Uint32Array) => bloom.addAll(values)

const HASH_COLUMNS = `toUInt32(bitShiftRight(h, 32)) AS hi, toUInt32(bitAnd(h, 4294967295)) AS lo`

export function dedupFilter(deps: Pick<Deps, 'ch' | 'logger' | 'config' | 'metrics'>, source: FilterSource): DedupFilter {
  const { ch, logger, metrics } = deps
  const held = new Map<number, Held>()
  const stopped = new AbortController()
  const dir = join(deps.config.dataDir, 'dedup-filter', source.name.replace(/[^A-Za-z0-9._-]/g, '_'))
  const fileOf = (p: number): string => join(dir, `${p}.bloom`)
  let cleanup: Promise<void> | undefined
  /** Snapshot writes so far: each writes a temporary file of its own, renamed over the snapshot. */
  let writes = 0

  /**
   * On a server: resolves once no insert into event_batches that the server began before now is running. A process
   * that held a partition before this one may have died with an insert still running there: its ids reach event_ids
   * only when it ends, and the filter must hold them before its misses are trusted.
   */
  const insertsBegunBefore = async (): Promise<void> => {
    if (ch.kind !== 'server') return
    const at = (await (await ch.reader.query({ query: 'SELECT toString(toUnixTimestamp64Micro(now64(6))) AS t', format: 'JSONEachRow' })).json<{ t: string }>())[0].t
    for (;;) {
      stopped.signal.throwIfAborted()
      const rs = await ch.reader.query({
        // On a cluster every replica's inserts: a dead owner may have sent its last insert through another node.
        query: `SELECT count() AS n FROM ${ch.cluster ? `clusterAllReplicas('${ch.cluster}', system.processes)` : 'system.processes'}
          WHERE query_kind = 'Insert' AND current_database = currentDatabase() AND positionCaseInsensitive(query, 'event_batches') > 0
            AND toUnixTimestamp64Micro(now64(6)) - toInt64(elapsed * 1000000) <= ${BigInt(at)}`,
        format: 'JSONEachRow',
      })
      if (Number((await rs.json<{ n: string }>())[0].n) === 0) return
      await sleep(INSERTS_POLL_MS, undefined, { signal: stopped.signal })
    }
  }

  /**
   * Filters of the partitions' ids in event_ids, read now, in one scan whatever their number (an assignment at start
   * loads every partition it gets). The customers of each partition come from the key's partition function
   * (core/partition.ts), over the distinct customers of event_ids with their ids' counts (which size the filters).
   */
  const buildMany = async (partitions: number[], count: number): Promise<{ blooms: Map<number, BlockedBloom>; builtAt: number }> => {
    const builtAt = await chNow(ch)
    const blooms = new Map<number, BlockedBloom>()
    const sized = (ids: number) => BlockedBloom.sized(Math.max(MIN_CAPACITY, Math.ceil(ids * HEADROOM)))
    const live = 'FROM event_ids WHERE expires_at > now()'
    if (count === 1) {
      // One partition holds every id.
      const n = Number((await (await ch.reader.query({ query: `SELECT toString(count()) AS n ${live}`, format: 'JSONEachRow' })).json<{ n: string }>())[0].n)
      const bloom = sized(n)
      await readRows(ch, `SELECT ${HASH_COLUMNS} FROM (SELECT ${ID_HASH_SQL} AS h ${live})`, 2, stopped.signal, adder(bloom))
      for (const p of partitions) blooms.set(p, bloom)
      return { blooms, builtAt }
    }
    const rs = await ch.reader.query({ query: `SELECT tenant_id, environment_id, external_customer_id, toString(count()) ${live} GROUP BY tenant_id, environment_id, external_customer_id`, format: 'JSONCompactEachRow' })
    const wanted = new Set(partitions)
    const ids = new Map<number, number>()
    const lines: string[] = []
    for (const [tenantId, environmentId, externalCustomerId, n] of await rs.json<[string, string, string, string]>()) {
      const p = keyPartition(eventKey({ tenantId, environmentId, externalCustomerId }), count)
      if (!wanted.has(p)) continue
      ids.set(p, (ids.get(p) ?? 0) + Number(n))
      lines.push(`${[tenantId, environmentId, externalCustomerId].map(tsvField).join('\t')}\t${p}`)
    }
    for (const p of partitions) blooms.set(p, sized(ids.get(p) ?? 0))
    if (lines.length === 0) return { blooms, builtAt }
    const scratch = new Uint32Array(ROWS_AT_ONCE * 2)
    await ch.withRows({ format: 'TabSeparated', structure: 'tenant_id String, environment_id String, external_customer_id String, p UInt32', text: lines.join('\n') }, (rows) =>
      readRows(
        ch,
        `SELECT c.p AS p, ${HASH_COLUMNS} FROM (SELECT tenant_id, environment_id, external_customer_id, ${ID_HASH_SQL} AS h ${live}) AS e
          INNER JOIN ${rows} AS c USING (tenant_id, environment_id, external_customer_id)`,
        3,
        stopped.signal,
        (v) => {
          // Each partition's rows of the batch to its filter at once.
          for (const [p, bloom] of blooms) {
            let m = 0
            for (let i = 0; i < v.length; i += 3) {
              if (v[i] !== p) continue
              scratch[m++] = v[i + 1]
              scratch[m++] = v[i + 2]
            }
            bloom.addAll(scratch.subarray(0, m))
          }
        },
      ),
    )
    return { blooms, builtAt }
  }

  /**
   * Builds run one at a time, each taking every partition asked for by then: the loads of one assignment share a scan
   * (the first waits a moment for the others to reach it).
   */
  let asked: { partition: number; count: number; done: (r: { bloom: BlockedBloom; builtAt: number } | Error) => void }[] = []
  let building: Promise<void> | undefined
  const build = (partition: number, count: number): Promise<{ bloom: BlockedBloom; builtAt: number }> =>
    new Promise((resolve, reject) => {
      asked.push({ partition, count, done: (r) => (r instanceof Error ? reject(r) : resolve(r)) })
      building ??= (async () => {
        await sleep(BUILD_GATHER_MS)
        while (asked.length > 0) {
          const batch = asked.filter((a) => a.count === asked[0].count)
          asked = asked.filter((a) => !batch.includes(a))
          const t = performance.now()
          try {
            const { blooms, builtAt } = await buildMany([...new Set(batch.map((a) => a.partition))], batch[0].count)
            logger.info({ partitions: [...blooms.keys()], ms: Math.round(performance.now() - t) }, 'dedup filter: filters built from event_ids')
            for (const a of batch) a.done({ bloom: blooms.get(a.partition)!, builtAt })
          } catch (err) {
            for (const a of batch) a.done(err as Error)
          }
        }
      })().finally(() => (building = undefined))
    })

  /** Adds the ids stored since `since` (ClickHouse's clock, ms), whatever their partition: a few more are harmless. */
  const topUp = async (bloom: BlockedBloom, since: number): Promise<void> => {
    const from = Math.floor(since / 1000) - TOP_UP_MARGIN_S
    await readRows(ch, `SELECT ${HASH_COLUMNS} FROM (SELECT ${ID_HASH_SQL} AS h FROM event_ids WHERE inserted_at >= toDateTime(${from}) AND expires_at > now())`, 2, stopped.signal, adder(bloom))
  }

  /**
   * A partition's snapshot, read straight into a filter's words (no second copy of a file of hundreds of MB, and past
   * the 2 GiB a readFile takes); undefined when there is none, or it was made for another partition count, or is old.
   */
  const readSnapshot = async (partition: number, count: number, now: number): Promise<{ header: SnapshotHeader; bloom: BlockedBloom } | undefined> => {
    let file: FileHandle
    try {
      file = await open(fileOf(partition), 'r')
    } catch {
      return undefined
    }
    try {
      const head = Buffer.alloc(4096)
      const { bytesRead } = await file.read(head, 0, head.length, 0)
      const newline = head.subarray(0, bytesRead).indexOf(10)
      const header = JSON.parse(head.subarray(0, newline).toString('utf8')) as SnapshotHeader
      const { size } = await file.stat()
      if (header.partition !== partition || header.count !== count || now - header.builtAt > REBUILD_AFTER_MS || size - newline - 1 !== header.words * 4) return undefined
      const words = new Uint32Array(header.words)
      const bytes = new Uint8Array(words.buffer)
      for (let at = 0; at < bytes.length; ) {
        const { bytesRead: n } = await file.read(bytes, at, Math.min(SNAPSHOT_IO_BYTES, bytes.length - at), newline + 1 + at)
        if (n === 0) throw new Error('the snapshot ended early')
        at += n
      }
      return { header, bloom: new BlockedBloom(words, header.added) }
    } catch (err) {
      logger.warn({ err, partition, file: fileOf(partition) }, 'dedup filter: snapshot unreadable; building from event_ids')
      return undefined
    } finally {
      await file.close()
    }
  }

  /** Writes a filter's snapshot: bits are only ever set, so words changing while written still hold every id added before `takenAt`. */
  const writeSnapshot = async (h: Held): Promise<void> => {
    const bloom = h.bloom
    if (!bloom) return
    const takenAt = await chNow(ch)
    const header: SnapshotHeader = { partition: h.partition, count: h.count, added: bloom.added, builtAt: h.builtAt, takenAt, words: bloom.words.length }
    await mkdir(dir, { recursive: true })
    const tmp = `${fileOf(h.partition)}.${process.pid}.${++writes}.tmp`
    const file = await open(tmp, 'w')
    try {
      await file.write(Buffer.from(`${JSON.stringify(header)}\n`))
      // writeFile writes it all from the current position, in pieces.
      await file.writeFile(new Uint8Array(bloom.words.buffer, bloom.words.byteOffset, bloom.words.byteLength))
    } finally {
      await file.close()
    }
    await rename(tmp, fileOf(h.partition))
  }

  /** The filters of the Set generations that came before this one (views first: an insert fails while a view's table is missing). */
  const dropOldGenerations = async (): Promise<void> => {
    const rs = await ch.reader.query({ query: "SELECT name FROM system.tables WHERE database = currentDatabase() AND match(name, '^event_id_seen_[0-9]+(_from_batches)?$')", format: 'JSONEachRow' })
    const names = (await rs.json<{ name: string }>()).map((r) => r.name).sort((a, b) => Number(b.endsWith('_from_batches')) - Number(a.endsWith('_from_batches')))
    for (const name of names) await ch.client.command({ query: `DROP ${name.endsWith('_from_batches') ? 'VIEW' : 'TABLE'} IF EXISTS ${name}` })
    if (names.length > 0) logger.info({ dropped: names }, 'dedup filter: the Set generations of earlier versions dropped')
  }

  const load = async (h: Held): Promise<void> => {
    const t = performance.now()
    cleanup ??= dropOldGenerations().catch((err: unknown) => logger.warn({ err }, 'dedup filter: old Set generations not dropped'))
    await cleanup
    h.count = await source.partitions()
    // The barrier comes before the reads: what a server still inserts for this partition is then in event_ids.
    await insertsBegunBefore()
    const now = await chNow(ch)
    const snapshot = await readSnapshot(h.partition, h.count, now)
    if (snapshot) {
      await topUp(snapshot.bloom, snapshot.header.takenAt)
      Object.assign(h, { bloom: snapshot.bloom, builtAt: snapshot.header.builtAt })
      logger.info({ partition: h.partition, ids: snapshot.bloom.added, ms: Math.round(performance.now() - t) }, 'dedup filter: loaded from its snapshot and topped up')
    } else {
      const { bloom, builtAt } = await build(h.partition, h.count)
      Object.assign(h, { bloom, builtAt })
      logger.info({ partition: h.partition, ids: bloom.added, ms: Math.round(performance.now() - t) }, 'dedup filter: built from event_ids')
    }
  }

  const hold = (partition: number): Held => {
    let h = held.get(partition)
    if (!h) {
      const fresh: Held = { partition, count: 0, builtAt: 0, ready: Promise.resolve(), recent: [] }
      fresh.ready = load(fresh).catch((err: unknown) => {
        fresh.failed = err as Error
        throw err
      })
      fresh.ready.catch(() => {})
      held.set(partition, fresh)
      h = fresh
    }
    return h
  }

  /**
   * Adds to a held filter the ids stored since `since` (after the barrier, as a load): lookups wait for it. When it fails
   * the next lookup is exact and the filter is loaded again.
   */
  const catchUp = (h: Held, since: number): void => {
    h.ready = h.ready.then(async () => {
      await insertsBegunBefore()
      if (h.bloom) await topUp(h.bloom, since)
    })
    h.ready.catch((err: unknown) => (h.failed = err as Error))
  }

  /** Replaces a full or old filter with one read anew, in the background; lookups go on with the old one meanwhile. */
  const rebuild = (h: Held): void => {
    if (h.rebuilding || stopped.signal.aborted) return
    h.pending = [...h.recent]
    h.rebuilding = build(h.partition, h.count)
      .then(({ bloom, builtAt }) => {
        // Not counted: the read holds nearly all of them, and counting them again started the next rebuild at once
        // while a partition was small (16 lookups of 50,000 ids are more than a quarter of 3 million).
        for (const hashes of h.pending ?? []) bloom.addAll(hashes, 0)
        logger.info({ partition: h.partition, ids: bloom.added, bytes: bloom.bytes, was: h.bloom?.bytes }, 'dedup filter: rebuilt')
        Object.assign(h, { bloom, builtAt })
      })
      .catch((err: unknown) => {
        if (!stopped.signal.aborted) logger.warn({ err, partition: h.partition }, 'dedup filter: rebuild failed; the current filter stays')
      })
      .finally(() => Object.assign(h, { pending: undefined, rebuilding: undefined }))
  }

  const snapshots = setInterval(() => {
    for (const h of held.values()) if (h.bloom) writeSnapshot(h).catch((err: unknown) => logger.warn({ err, partition: h.partition }, 'dedup filter: snapshot not written'))
  }, SNAPSHOT_EVERY_MS)
  snapshots.unref()

  return {
    of(partition) {
      return {
        async stored(lookup) {
          const h = hold(partition)
          try {
            await h.ready
          } catch {
            // Loading failed (ClickHouse down): the full lookup now, and the load again at the next lookup.
            if (held.get(partition) === h) held.delete(partition)
            return storedRows(ch, lookup)
          }
          const { bloom } = h
          const hashes = lookup.hashes
          if (!bloom || !hashes) return storedRows(ch, lookup)
          const hits = bloom.hits(hashes)
          // Added before the insert begins; a chunk that fails is looked up again and then finds them as hits.
          bloom.addAll(hashes)
          h.pending?.push(hashes)
          h.recent.push(hashes)
          if (h.recent.length > RECENT_LOOKUPS) h.recent.shift()
          if (bloom.added > bloom.capacity || Date.now() - h.builtAt > REBUILD_AFTER_MS) rebuild(h)
          metrics.dedupFilterIds.set({ partition: String(partition) }, bloom.added)
          metrics.dedupFilterBytes.set({ partition: String(partition) }, bloom.bytes)
          if (hits.length === 0) return []
          const ids = idsOf(lookup)
          return storedRows(ch, lookupOfIds(lookup, hits.map((i) => ids[i])))
        },
      }
    },
    async assign(partitions, { missedSince } = {}) {
      const keep = new Set(partitions)
      // At once, before a lookup of the new assignment: it must not use a filter without the ids stored meanwhile.
      if (missedSince !== undefined) {
        for (const [p, h] of held) {
          if (keep.has(p)) catchUp(h, missedSince)
          else {
            // Its snapshot would claim the ids of the time it is written.
            held.delete(p)
            metrics.dedupFilterIds.remove({ partition: String(p) })
            metrics.dedupFilterBytes.remove({ partition: String(p) })
          }
        }
      }
      // Partitions added to the topic move customers: a filter built for another count no longer holds its partition's ids.
      const count = held.size > 0 ? await source.partitions() : 0
      for (const [p, h] of held) {
        if (keep.has(p) && (h.count === 0 || h.count === count || h.failed)) continue
        held.delete(p)
        metrics.dedupFilterIds.remove({ partition: String(p) })
        metrics.dedupFilterBytes.remove({ partition: String(p) })
        await h.ready.catch(() => {})
        await h.rebuilding
        await writeSnapshot(h).catch((err: unknown) => logger.warn({ err, partition: p }, 'dedup filter: snapshot not written'))
      }
      for (const p of partitions) hold(p)
    },
    held() {
      return [...held.values()].map((h) => ({ partition: h.partition, ids: h.bloom?.added ?? 0, bytes: h.bloom?.bytes ?? 0, state: h.failed ? 'failed' : h.bloom ? 'ready' : 'loading' }))
    },
    async stop() {
      clearInterval(snapshots)
      stopped.abort()
      for (const h of held.values()) {
        await h.ready.catch(() => {})
        await h.rebuilding
        await writeSnapshot(h).catch((err: unknown) => logger.warn({ err, partition: h.partition }, 'dedup filter: snapshot not written'))
      }
    },
  }
}
