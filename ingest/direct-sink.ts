// Direct mode: a request is answered once its events are fsync'd into the event log (infra/event-log.ts); the
// log inserter stores them in ClickHouse in large batches, so the answer no longer waits for an insert.
import type { Deps } from '../infra/deps.ts'
import { openEventLog } from '../infra/event-log.ts'
import { startLogInserter } from '../aggregator/log-inserter.ts'
import type { Sink } from './sink.ts'

export async function directSink(deps: Deps): Promise<Sink> {
  const log = await openEventLog(deps)
  const inserter = startLogInserter(deps, log)
  return {
    kind: 'direct',
    write: (events) => log.append(events),
    // Stop accepting, store the backlog, then close (SIGTERM drains; a SIGKILL leaves it to the next start's replay).
    close: async () => {
      await log.stopAccepting()
      await inserter.drain()
      await log.close()
    },
  }
}
