// POST /v1/ai/pricing/parse: a plain-language pricing description → a configuration ready to create.
// The rules parser (core/pricing-parse) answers first; when a model endpoint is configured (AI_PROVIDER_URL)
// and the rules left part of the description out (a warning with left_out) or placed nothing — or the
// caller asks for the model — the model is asked too,
// and its answer is used only if it passes the same checks as a create request: the JSON schemas of the
// create endpoints (handed in by the route) and the creation rules (checkConfig). Otherwise the rules'
// answer stands, with a warning saying why the model's was not used.
import { AppError, invalidOperation } from '../../../core/errors.ts'
import { checkConfig, type PricingConfig } from '../../../core/pricing-parse/config.ts'
import { NOTHING_PLACED, parsePricingDescription } from '../../../core/pricing-parse/parse.ts'
import { AiError, chatCompletion, type ChatMessage } from '../../../infra/ai.ts'
import type { Deps } from '../../../infra/deps.ts'

export interface ParseInput {
  description: string
  /** The currency of amounts written without one. */
  currency?: string
  /** The plan's name when the description names none. */
  plan_name?: string
  /** auto (default): the rules, and the model when they leave something out; rules: never the model; model: always ask it. */
  parser?: 'auto' | 'rules' | 'model'
}

export interface ParseResult extends PricingConfig {
  /** Which parser's configuration this is. */
  source: 'rules' | 'model'
}

/** Checks a value against the create endpoints' JSON schemas; throws validation_error naming the field. */
export type ShapeCheck = (value: unknown) => PricingConfig

const EXAMPLE = '$49/month includes 10k API calls, then $0.002 per call; 1M tokens free then $3 per million; SSO on Enterprise'

function systemPrompt(): string {
  const { warnings: _warnings, ...example } = parsePricingDescription(EXAMPLE)
  return [
    'You turn a plain-language pricing description into JSON for a billing API. Answer with one JSON object and nothing else, shaped:',
    '{"currency": ISO 4217 code, "meters": [{"ref", "name", "event_name", "aggregation": {"type": "COUNT"} or {"type": "SUM" | "COUNT_UNIQUE" | "MAX" | "LATEST", "field": event property}}],',
    ' "features": [{"ref", "name", "type": "metered" | "boolean" | "static", "lookup_key", "meter_ref" (metered only), "unit_singular", "unit_plural"}],',
    ' "plans": [{"name", "lookup_key", "prices": [price], "entitlements": [entitlement]}], "warnings": [{"text": the phrase you could not express, "message": why}]}',
    'price: {"currency", "type": "FIXED" | "USAGE", "billing_model": "FLAT_FEE" | "PACKAGE" | "TIERED", "billing_period": "DAILY" | "WEEKLY" | "MONTHLY" | "QUARTERLY" | "HALF_YEARLY" | "ANNUAL" | "ONETIME",',
    ' "amount": decimal string (FLAT_FEE: per unit; PACKAGE: per package), "transform_quantity": {"divide_by": integer, "round": "up"} (PACKAGE only),',
    ' "tier_mode": "VOLUME" | "SLAB" and "tiers": [{"up_to": integer, or null for the last tier, "unit_amount": decimal string}] (TIERED only),',
    ' "meter_ref" (USAGE only), "trial_period_days" (recurring FIXED only), "min_quantity", "display_name"}.',
    'entitlement: {"feature_ref", then for a metered feature "usage_limit" (integer, or null for unlimited), "usage_reset_period" (MONTHLY, …), "is_soft_limit"; for a boolean one "is_enabled": true; for a static one "static_value"}.',
    'Rules: amounts are decimal strings such as "0.002", never JSON numbers; an included allowance is a metered entitlement with usage_limit and is_soft_limit true, plus a USAGE price for what goes beyond it (not a free tier);',
    'USAGE prices need a meter_ref and are never ONETIME; every ref must name an entry of meters or features; use one currency; put whatever you cannot express in warnings instead of guessing.',
    `Example. Description: ${JSON.stringify(EXAMPLE)}`,
    `Answer: ${JSON.stringify({ ...example, warnings: [] })}`,
  ].join('\n')
}

/** The JSON object in a model's answer, fenced in ``` or not. */
function jsonOf(content: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(content)
  const text = (fenced ? fenced[1] : content).trim()
  const start = text.indexOf('{')
  const end = text.lastIndexOf('}')
  if (start < 0 || end < start) throw new AiError('the answer holds no JSON object')
  try {
    return JSON.parse(text.slice(start, end + 1))
  } catch {
    throw new AiError('the answer is not valid JSON')
  }
}

async function askModel(deps: Deps, input: ParseInput, shape: ShapeCheck): Promise<PricingConfig> {
  const hints = [input.currency && `Amounts written without a currency are in ${input.currency.toUpperCase()}.`, input.plan_name && `Name the plan "${input.plan_name}" if the description names none.`]
  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt() },
    { role: 'user', content: [...hints.filter(Boolean), `Description: ${JSON.stringify(input.description)}`].join('\n') },
  ]
  const config = shape(jsonOf(await chatCompletion(deps.config.ai!, messages)))
  checkConfig(config)
  if (input.currency && config.currency !== input.currency.toUpperCase()) {
    throw new AppError('validation_error', `currency: the model answered ${config.currency}, not ${input.currency.toUpperCase()}`, { currency: config.currency })
  }
  return config
}

const why = (err: unknown): string => (err instanceof AppError ? `${err.message}` : err instanceof AiError ? err.message : 'it failed')

/** Only a description with nothing the rules could place goes on to the model after a refusal. */
const modelMayHelp = (err: unknown): boolean => err instanceof AppError && err.details.description === NOTHING_PLACED

export async function parsePricing(deps: Deps, input: ParseInput, shape: ShapeCheck): Promise<ParseResult> {
  const parser = input.parser ?? 'auto'
  const ai = deps.config.ai
  if (parser === 'model' && !ai) throw invalidOperation('no model is configured: set AI_PROVIDER_URL, or use parser rules', { parser })
  const rules = () => parsePricingDescription(input.description, input)
  if (!ai || parser === 'rules') return { source: 'rules', ...rules() }
  let ruled: PricingConfig | undefined
  let refusal: unknown
  try {
    ruled = rules()
  } catch (err) {
    if (!modelMayHelp(err)) throw err
    refusal = err
  }
  if (ruled && parser === 'auto' && !ruled.warnings.some((w) => w.left_out)) return { source: 'rules', ...ruled }
  try {
    return { source: 'model', ...(await askModel(deps, input, shape)) }
  } catch (err) {
    if (!(err instanceof AppError) && !(err instanceof AiError)) throw err
    deps.logger.warn({ err: why(err) }, 'pricing parse: the model answer was not used')
    const warning = { text: '', message: `the model's answer was not used: ${why(err)}`, left_out: false }
    if (ruled) return { source: 'rules', ...ruled, warnings: [...ruled.warnings, warning] }
    const e = refusal as AppError
    throw new AppError(e.code, e.message, { ...e.details, model: warning.message })
  }
}
