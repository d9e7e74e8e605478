// A direct-mode intake process for ingest/event-log-crash.test.ts, which kills it: serves the event routes over
// the event log of DATA_DIR with no inserter running, so what it acknowledges is in the log only when it dies.
// Prints {"port","key","tenantId"} once listening.
import type { AddressInfo } from 'node:net'
import { loadConfig } from '../core/config.ts'
import { createTenant } from '../domains/tenancy/tenants/service.ts'
import { createApp } from '../http/app.ts'
import { ingestRoutes } from '../http/routes/intake.ts'
import { openDeps } from '../infra/deps.ts'
import { openEventLog } from '../infra/event-log.ts'
import { migrate } from '../infra/migrate.ts'
import { attachSink } from '../ingest/sink.ts'

const deps = await openDeps(loadConfig())
await migrate(deps.sql, deps.ch)
const tenant = await createTenant(deps, 'event-log-crash')
const log = await openEventLog(deps)
attachSink(deps, { kind: 'direct', write: (events) => log.append(events), close: () => log.close() })
const server = createApp(deps, ingestRoutes).listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port, key: tenant.apiKey, tenantId: tenant.tenantId })}\n`)
})
