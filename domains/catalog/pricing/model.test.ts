// The pricing parser with a model configured: a local server on 127.0.0.1 answers as an OpenAI-compatible
// chat-completions API would, with whatever each test sets; what it answers is used only when it passes the
// create endpoints' schemas and rules, and otherwise the rules' answer stands.
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/harness.ts'

interface Answer {
  status?: number
  /** The message content, or a whole body when `raw`. */
  content?: string
  raw?: string
  delayMs?: number
}

let server: Server
let answer: Answer = {}
const received: { path: string; authorization?: string; body: any }[] = []
let h: Harness

const completion = (content: string) => JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] })

async function readBody(req: IncomingMessage): Promise<string> {
  let text = ''
  for await (const chunk of req) text += chunk
  return text
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    received.push({ path: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(await readBody(req)) })
    const { status = 200, content = '', raw, delayMs = 0 } = answer
    await new Promise((r) => setTimeout(r, delayMs))
    if (res.destroyed) return
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(raw ?? completion(content))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  h = await startHarness({ env: { AI_PROVIDER_URL: `http://127.0.0.1:${port}/v1`, AI_PROVIDER_KEY: 'sk-test', AI_MODEL: 'pricing-test', AI_TIMEOUT_SECONDS: '1' } })
})

afterAll(async () => {
  await h?.stop()
  server?.closeAllConnections()
  await new Promise((r) => server?.close(r))
})

beforeEach(() => {
  received.length = 0
  answer = {}
})

const parse = (body: unknown, query = '') => h.http('POST', `/v1/ai/pricing/parse${query}`, { body })

/** A configuration as a model might answer "Fifty dollars a month for Basic" (SSO added, as models do). */
const modelConfig = () => ({
  currency: 'USD',
  meters: [],
  features: [{ ref: 'sso', name: 'SSO', type: 'boolean', lookup_key: 'sso' }],
  plans: [{ name: 'Basic', lookup_key: 'basic', prices: [{ currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '50' }], entitlements: [{ feature_ref: 'sso', is_enabled: true }] }],
  warnings: [],
})

// Spelled-out amounts are beyond the rules: they place nothing here.
const WORDS = 'Fifty dollars a month for Basic'
// The rules place the price and leave one phrase out: the model is asked.
const PARTLY = '$20/month, billed through our reseller network'

describe('POST /v1/ai/pricing/parse with a model', () => {
  it("uses the model's answer when the rules cannot place the description, and sends it the description", async () => {
    answer = { content: JSON.stringify(modelConfig()) }
    const res = await parse({ description: WORDS })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ source: 'model', currency: 'USD', plans: [{ lookup_key: 'basic', prices: [{ amount: '50' }] }] })
    expect(received).toHaveLength(1)
    const [req] = received
    expect(req.path).toBe('/v1/chat/completions')
    expect(req.authorization).toBe('Bearer sk-test')
    expect(req.body).toMatchObject({ model: 'pricing-test', temperature: 0, response_format: { type: 'json_object' } })
    expect(req.body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('decimal strings') })
    expect(req.body.messages[1]).toEqual({ role: 'user', content: `Description: ${JSON.stringify(WORDS)}` })
  })

  it('does not ask the model when the rules place everything, unless asked to', async () => {
    const res = await parse({ description: '$20/month' })
    expect(res.body.source).toBe('rules')
    // Notes and assumptions leave nothing out: no model either.
    const noted = await parse({ description: '¥2000/month; SSO on Enterprise' })
    expect(noted.body.source).toBe('rules')
    expect(noted.body.warnings.map((w: any) => w.left_out)).toEqual([false, false])
    expect(received).toEqual([])
    answer = { content: '```json\n' + JSON.stringify(modelConfig()) + '\n```' }
    const asked = await parse({ description: '$20/month', parser: 'model' })
    expect(asked.body.source).toBe('model')
    expect((await parse({ description: PARTLY, parser: 'rules' })).body.source).toBe('rules')
    expect(received).toHaveLength(1)
  })

  it.each([
    ['an answer that is not JSON', { content: 'Sure! The plan costs fifty dollars.' }, /holds no JSON object/],
    ['an amount as a JSON number', { content: JSON.stringify({ ...modelConfig(), plans: [{ ...modelConfig().plans[0], prices: [{ ...modelConfig().plans[0].prices[0], amount: 50 }] }] }) }, /plans\[0\]\.prices\[0\]\.amount/],
    ['a field no endpoint takes', { content: JSON.stringify({ ...modelConfig(), discount: '10%' }) }, /discount is not a known field/],
    ['a ref to no feature', { content: JSON.stringify({ ...modelConfig(), features: [] }) }, /feature_ref: names no feature/],
    ['a usage price without a meter', { content: JSON.stringify({ ...modelConfig(), plans: [{ ...modelConfig().plans[0], prices: [{ ...modelConfig().plans[0].prices[0], type: 'USAGE' }] }] }) }, /meter_ref: is required for USAGE/],
    ['a currency we do not know', { content: JSON.stringify({ ...modelConfig(), currency: 'XYZ' }) }, /"XYZ" is not an ISO 4217 currency/],
    ['an error status', { status: 500, raw: '{"error":"overloaded"}' }, /answered 500/],
    ['a body without a message', { raw: '{"choices":[]}' }, /answered no message content/],
    ['no answer in time', { delayMs: 1500, content: JSON.stringify(modelConfig()) }, /no answer within 1 s/],
  ])('refuses %s: the rules answer stands, or their refusal', async (_name, given, reason) => {
    answer = given
    const partly = await parse({ description: PARTLY })
    expect(partly.status, JSON.stringify(partly.body)).toBe(200)
    expect(partly.body.source).toBe('rules')
    expect(partly.body.plans[0].prices.map((p: any) => p.amount)).toEqual(['20'])
    expect(partly.body.warnings.at(-1).message).toMatch(/^the model's answer was not used: /)
    expect(partly.body.warnings.at(-1).message).toMatch(reason)

    const before = (await h.http('GET', '/v1/plans')).body.pagination.total
    const refused = await parse({ description: WORDS }, '?apply=true')
    expect(refused.status).toBe(400)
    expect(refused.body.details).toMatchObject({ description: 'no price, allowance or feature was recognised', model: expect.stringMatching(reason) })
    expect((await h.http('GET', '/v1/plans')).body.pagination.total).toBe(before)
  })

  it('refuses what the rules refuse outright without asking the model', async () => {
    for (const description of ['49 XYZ per month', '   ', '$5/month and €5/month']) {
      expect((await parse({ description })).status).toBe(400)
    }
    expect(received).toEqual([])
  })

  it("creates the model's configuration with apply=true", async () => {
    answer = { content: JSON.stringify(modelConfig()) }
    const res = await parse({ description: WORDS }, '?apply=true')
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    const plan = (await h.http('GET', `/v1/plans/${res.body.applied.plans[0].id}`)).body
    expect(plan).toMatchObject({ name: 'Basic', prices: [{ amount: '50', billing_period: 'MONTHLY' }], entitlements: [{ feature: { lookup_key: 'sso' } }] })
  })

  it("holds the model to the currency the request gives", async () => {
    answer = { content: JSON.stringify(modelConfig()) }
    const res = await parse({ description: WORDS, currency: 'EUR' })
    expect(res.status).toBe(400)
    expect(res.body.details.model).toMatch(/answered USD, not EUR/)
    expect(received[0].body.messages[1].content).toContain('Amounts written without a currency are in EUR.')
  })
})
