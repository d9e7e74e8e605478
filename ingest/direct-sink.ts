// Direct mode: no broker; the in-process batcher writes to ClickHouse and the reply waits for it.
import { randomUUID } from 'node:crypto'
import type { Deps } from '../infra/deps.ts'
import { writeBatch } from '../aggregator/writer.ts'
import { batchedSink, type Sink } from './sink.ts'

export const directSink = (deps: Deps): Sink =>
  batchedSink(
    deps,
    'direct',
    deps.config.batch,
    // A few quick attempts within the request; the client's own retry (same ids) is safe after that.
    async (events) => void (await writeBatch(deps, events, [], `direct:${randomUUID()}`, { attempts: 3, baseMs: 100, maxMs: 1000 })),
    'event storage is unavailable',
  )
