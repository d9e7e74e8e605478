// At-least-once delivery across a crash: the program stops while a delivery is in flight (the receiver
// has the request, the outcome is not yet recorded); after a restart on the same data the next run
// sends the event again with the same webhook-id, and only then is it delivered.
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startRoles, type Running } from '../../roles.ts'
import { jobs } from '../../worker/jobs.ts'
import { runJob } from '../../infra/scheduler.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import type { WebhookEventWire } from '../../test/wire.ts'

let h: Harness
let restarted: Running | undefined

beforeAll(async () => {
  h = await startHarness({ roles: ['api'] })
})
afterAll(async () => {
  await restarted?.stop()
  await h?.stop()
})

it('sends an event again after a crash mid-delivery, with the same webhook-id', async () => {
  const received: IncomingHttpHeaders[] = []
  let arrived!: () => void
  const firstArrived = new Promise<void>((resolve) => (arrived = resolve))
  let answerFirst!: () => void
  const firstAnswer = new Promise<void>((resolve) => (answerFirst = resolve))
  const server = createServer((req, res) => {
    received.push(req.headers)
    req.resume()
    if (received.length === 1) {
      arrived()
      void firstAnswer.then(() => res.writeHead(200).end())
    } else res.writeHead(200).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`

  expect((await h.http('POST', '/v1/webhooks/endpoints', { body: { url } })).status).toBe(201)
  const customer = await h.http('POST', '/v1/customers', { body: { external_id: 'crash-1' } })
  const eventId = (await h.http('GET', `/v1/webhooks/events?entity_id=${customer.body.id}`)).body.items[0].id

  const delivery = jobs.find((j) => j.name === 'webhook-delivery')!
  const crashed = runJob(h.running.deps, delivery).then(
    () => 'finished',
    () => 'died',
  )
  await firstArrived
  await h.running.stop() // the process goes away while the receiver holds the request
  answerFirst()
  expect(await crashed).toBe('died')

  restarted = await startRoles(h.config, ['api'])
  const http = (method: string, path: string) =>
    fetch(`http://127.0.0.1:${restarted!.port}${path}`, { method, headers: { 'x-api-key': h.key } }).then(async (r) => ({ status: r.status, body: (await r.json()) as WebhookEventWire }))
  // The dead run's lease is still held; an operator (or its expiry) frees it.
  await restarted.deps.sql`UPDATE job_leases SET expires_at = now() WHERE name = 'webhook-delivery'`
  expect((await http('GET', `/v1/webhooks/events/${eventId}`)).body.delivery_status).toBe('pending')

  expect((await http('POST', '/v1/jobs/webhook-delivery/run')).status).toBe(200)
  expect(received.map((r) => r['webhook-id'])).toEqual([eventId, eventId])
  const event = (await http('GET', `/v1/webhooks/events/${eventId}`)).body
  expect(event).toMatchObject({ delivery_status: 'delivered', attempts: 1, deliveries: [{ delivery_status: 'delivered', attempts: 1 }] })
  await new Promise((resolve) => server.close(resolve))
})
