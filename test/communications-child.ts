// A worker process for domains/communications/communications.test.ts, which kills it between the SMTP server's
// acceptance and the record of it: runs the communications job's work once over the database DATA_DIR (or
// DATABASE_URL) names, on a clock moved by the argument's milliseconds (past a dead claim's lease), and prints its
// summary and every message record.
import { fixedClock } from '../core/clock.ts'
import { loadConfig } from '../core/config.ts'
import { openDeps } from '../infra/deps.ts'
import { deliverCommunications } from '../domains/communications/service.ts'

const deps = await openDeps(loadConfig(), { clock: fixedClock(new Date(Date.now() + Number(process.argv[2] ?? 0))) })
try {
  const summary = await deliverCommunications(deps)
  const rows = await deps.sql`SELECT id, invoice_id, delivery_status, message_id, attempts FROM communications ORDER BY created_at, id`
  process.stdout.write(JSON.stringify({ summary, rows }))
} finally {
  await deps.close()
}
