// A worker process for domains/integrations/quickbooks-crash.test.ts, which kills it mid-push: runs the
// accounting sync once over the database DATA_DIR (or DATABASE_URL) names, then prints its summary and
// the sync rows of the invoice given as argument. It calls the job's accounting step directly: the
// job's lease, held for 10 minutes by a killed run, is not what the test is about.
import { loadConfig } from '../core/config.ts'
import { openDeps } from '../infra/deps.ts'
import { syncAccounting } from '../domains/integrations/accounting.ts'

const deps = await openDeps(loadConfig())
try {
  const summary = await syncAccounting(deps)
  const rows = await deps.sql`SELECT entity_type, sync_status, external_id FROM accounting_syncs WHERE invoice_id = ${process.argv[2]} ORDER BY entity_type`
  process.stdout.write(JSON.stringify({ summary, rows }))
} finally {
  await deps.close()
}
