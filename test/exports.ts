// Shared step of the export tests: a client that reads a streamed CSV export up to a point and leaves.
import { request, type IncomingMessage } from 'node:http'
import { expect } from 'vitest'
import type { Harness } from './harness.ts'

/**
 * POSTs `body` to the export at `path`, reads chunks until `leaveOn` holds for the text read so far (default: the first
 * chunk), disconnects, and waits until the service counts the export as aborted (sendCsv counts it once its source,
 * and so its query, has stopped). The rows it had sent by then.
 */
export async function leaveMidExport(h: Harness, path: string, body: unknown, leaveOn: (text: string) => boolean = (text) => text.length > 0): Promise<number> {
  const metrics = h.running.deps.metrics
  const aborted = async () => (await metrics.csvExports.get()).values.find((v) => v.labels.outcome === 'aborted')?.value ?? 0
  const rowsSent = async () => (await metrics.csvExportRows.get()).values[0]?.value ?? 0
  const [abortedBefore, rowsBefore] = [await aborted(), await rowsSent()]
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    request(`${h.baseUrl}${path}`, { method: 'POST', headers: { 'x-api-key': h.key, 'content-type': 'application/json' } }, resolve).on('error', reject).end(JSON.stringify(body)),
  )
  expect(res.statusCode).toBe(200)
  let text = ''
  // Leaving the loop destroys the response: the client disconnects.
  for await (const chunk of res) {
    text += String(chunk)
    if (leaveOn(text)) break
  }
  expect(leaveOn(text), 'the export ended before the client meant to leave').toBe(true)
  for (let i = 0; i < 200 && (await aborted()) === abortedBefore; i++) await new Promise((r) => setTimeout(r, 50))
  expect(await aborted()).toBe(abortedBefore + 1)
  return (await rowsSent()) - rowsBefore
}
