// Direct mode: no broker; the in-process batcher writes to ClickHouse and the reply waits for it.
import { randomUUID } from 'node:crypto'
import { serviceUnavailable } from '../core/errors.ts'
import type { UsageEvent } from '../core/events.ts'
import type { Deps } from '../infra/deps.ts'
import { Batcher } from '../aggregator/batcher.ts'
import { writeBatch } from '../aggregator/writer.ts'
import type { Sink } from './sink.ts'

export function directSink(deps: Deps): Sink {
  const batcher = new Batcher<UsageEvent>({ ...deps.config.batch, maxPendingRows: deps.config.maxPendingEvents }, async (events) => {
    try {
      // A few quick attempts within the request; the client's own retry (same ids) is safe after that.
      await writeBatch(deps, events, [], `direct:${randomUUID()}`, { attempts: 3, baseMs: 100, maxMs: 1000 })
    } catch (err) {
      deps.logger.warn({ err }, 'usage batch not stored')
      throw serviceUnavailable('event storage is unavailable; nothing was accepted, retry with the same event ids')
    }
  })
  return {
    kind: 'direct',
    write: (events, bytes) => batcher.add(events, bytes),
    close: () => batcher.drain(),
  }
}
