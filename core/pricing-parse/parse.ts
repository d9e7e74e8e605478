// A plain-language pricing description → a configuration ready to create (config.ts), without a model.
// One file (over 400 lines) because it is one grammar: the phrase rules share the segment state they build.
//
// The description is cut into segments (sentences, ";", lines) and each segment into phrases (",", "and",
// "or", "then", "plus", "with", "includes"). A segment may name its plan ("Pro: …", "The Pro plan …",
// "… on Enterprise", "Enterprise adds …"); phrases then place, on that plan:
//   - a recurring fixed price ("$49/month", "€490 a year", "$39/month billed annually", "$99 every 3 months");
//   - a seat price ("$10 per seat per month", "minimum 3 seats", "5 users included");
//   - a one-time fee ("$500 setup fee");
//   - usage of a unit: an allowance ("includes 10k API calls", "1M tokens free"), a rate ("$0.002 per call",
//     "$3 per million", "$5 per 1,000 emails" as a package), tiers ("first 10,000 at $0.001, next 90,000 at
//     $0.0008, then $0.0005", "1-1,000: $0.05; 1,001+: $0.04", "volume pricing: …");
//   - a trial ("14-day free trial");
//   - features: boolean ("SSO", "audit logs"), static ("Support: 24/7", "99.9% uptime SLA", "5 projects").
// What it cannot place becomes a warning; a description it cannot price at all, one in a currency it does
// not know, in two currencies, or with negative or overlapping amounts is refused (validation_error).
import { AppError, validationError } from '../errors.ts'
import type { ResetPeriod } from '../entitlements.ts'
import { D, type Decimal } from '../money.ts'
import type { BillingPeriod } from '../periods.ts'
import type { PricePeriod } from '../price-rules.ts'
import type { EntitlementDraft, FeatureDraft, MeterDraft, PlanDraft, PriceDraft, PricingConfig, Warning } from './config.ts'
import { everyPeriod, isGauge, isQuantity, isSeat, magnitude, periodAdverb, periodNoun, PLAN_NAMES, singular, slug, titled, UNIT_STOP, type Period } from './lexicon.ts'
import { isSym, isWord, tokenize, whole, type Token } from './tokens.ts'

export interface ParseOptions {
  /** The currency of amounts written without one ("49 per month"), when the description names none. */
  currency?: string
  /** The name of the plan when the description names none; "Standard" by default. */
  plan_name?: string
}

const MAX_LENGTH = 4000

/** The refusal of a description in which nothing could be placed (a model may still read it). */
export const NOTHING_PLACED = 'no price, allowance or feature was recognised'

/** Words of a sentence rather than of a feature's name: such a phrase is a feature only after "includes", "with", a plan's name. */
const NOT_IN_FEATURE_NAMES = new Set([
  'we', 'our', 'you', 'your', 'they', 'is', 'are', 'be', 'will', 'can', 'may', 'should', 'must', 'billed', 'paid', 'charged', 'invoiced',
  'through', 'via', 'by', 'from', 'if', 'when', 'unless', 'please', 'contact', 'per', 'price', 'prices', 'cost', 'costs', 'dollar', 'dollars',
  'euro', 'euros', 'pound', 'pounds', 'cent', 'cents', 'bucks',
])

/** A plan's name in a phrase: a word, or two when the second is capitalised ("Enterprise Plus"). */
const NAME = String.raw`([A-Za-z][\w+]*(?:\s+[A-Z][\w+]*)?)`

// ---- what is gathered per plan ----------------------------------------------------------------------------

interface Unit {
  key: string
  /** Singular words, lower case, without "of": how phrases of the same unit are matched ("call" ~ "API calls"). */
  words: string[]
  /** As written, in the plural: "API calls". */
  name: string
  kind: 'count' | 'sum' | 'unique'
  /** The summed property of a 'sum' unit ("tokens", "gb"). */
  field?: string
  event: string
}

interface Segment {
  free: boolean
  /** Price of `per` units. */
  rate: Decimal
  per: number
  proRata: boolean
  size?: number
  from?: number
  to?: number
  open?: boolean
  period?: Period
  /** An allowance ("5 GB free"): it comes first wherever it was written. */
  allowance?: boolean
  text: string
}

/** A unit's usage on a plan; without segments ("unlimited API calls") it is granted without limit or price. */
interface UsageLine {
  unit: Unit
  segments: Segment[]
  volume: boolean
}

interface Money {
  amount: Decimal
  currency: string | null
  text: string
}

interface FixedPrice {
  money: Money
  period: PricePeriod
  count: number
  name?: string
}

interface Plan {
  name: string
  fixed: FixedPrice[]
  oneTime: FixedPrice[]
  seat?: { money: Money; period?: Period; word: string }
  includedSeats?: { count: number; word: string }
  minSeats?: number
  usage: UsageLine[]
  /** Boolean and static features, by lookup key. */
  grants: { key: string; name: string; type: 'boolean' | 'static'; value?: string }[]
  trialDays?: number
  inherits: string[]
  explicit: boolean
}

class Parser {
  readonly warnings: Warning[] = []
  readonly plans: Plan[] = []
  readonly units: Unit[] = []
  readonly currencies = new Set<string>()
  bareAmounts = 0
  placed = 0
  private current?: Plan
  private lastSegment?: Segment
  private lastUnit = new Map<Plan, Unit>()

  constructor(private readonly options: ParseOptions) {}

  /** A note on the configuration; `leftOut` when part of the description is not in it (a model may place it). */
  warn(text: string, message: string, leftOut = false): void {
    this.warnings.push({ text: text.trim(), message, left_out: leftOut })
  }

  plan(name: string, explicit = true): Plan {
    const found = this.plans.find((p) => p.name.toLowerCase() === name.toLowerCase())
    if (found) {
      found.explicit ||= explicit
      return found
    }
    const plan: Plan = { name: titled(name), fixed: [], oneTime: [], usage: [], grants: [], inherits: [], explicit }
    this.plans.push(plan)
    return plan
  }

  /** The plan phrases go to when no segment names one: the last named, else the default. */
  defaultPlan(): Plan {
    this.current ??= this.plan(this.options.plan_name?.trim() || 'Standard', false)
    return this.current
  }

  /** A plan name we know: a usual one ("Pro", "Enterprise Plus"), or one the description declared already. */
  isPlanName(name: string): boolean {
    const first = name.trim().split(/\s+/)[0].toLowerCase()
    return PLAN_NAMES.has(first) || this.plans.some((p) => p.explicit && p.name.toLowerCase() === name.trim().toLowerCase())
  }

  money(t: Extract<Token, { k: 'money' | 'num' }>): Money {
    if (t.k === 'num') {
      this.bareAmounts++
      return { amount: t.value, currency: null, text: t.text }
    }
    if (t.currency) this.currencies.add(t.currency)
    else this.bareAmounts++
    if (t.text.includes('¥')) this.warn(t.text, '¥ is read as JPY; write CNY for yuan')
    return { amount: t.amount, currency: t.currency, text: t.text }
  }

  // ---- units -------------------------------------------------------------------------------------------

  unit(words: string[]): Unit {
    const lower = words.filter((w) => w.toLowerCase() !== 'of').map((w) => singular(w))
    const found = this.units.find((u) => lower.every((w) => u.words.includes(w)) || u.words.every((w) => lower.includes(w)))
    // "GB of storage": the thing is storage, measured in GB.
    const ofAt = words.findIndex((w) => w.toLowerCase() === 'of')
    const thing = ofAt > 0 ? words.slice(ofAt + 1) : words
    const name = ofAt > 0 ? `${titled(thing.join(' '))} (${words.slice(0, ofAt).join(' ')})` : pluralPhrase(words)
    if (found) {
      if (lower.length > found.words.length) {
        found.words = lower
        found.name = name
      }
      return found
    }
    const measure = [...lower].reverse().find((w) => isQuantity(w))
    const active = lower.includes('active') || lower.includes('mau')
    const base = active ? 'user_active' : slug(thing.map((w) => singular(w)).join(' '))
    let key = base
    for (let n = 2; this.units.some((u) => u.key === key); n++) key = `${base}_${n}`
    const unit: Unit = active
      ? { key, words: lower, name: lower.includes('mau') ? 'Monthly active users' : name, kind: 'unique', field: 'user_id', event: key }
      : measure
        ? { key, words: lower, name, kind: 'sum', field: measure.length <= 3 ? measure : slug(pluralWord(measure)), event: `${key}_usage` }
        : { key, words: lower, name, kind: 'count', event: key }
    this.units.push(unit)
    return unit
  }

  line(plan: Plan, unit: Unit): UsageLine {
    let line = plan.usage.find((l) => l.unit === unit)
    if (!line) {
      line = { unit, segments: [], volume: false }
      plan.usage.push(line)
    }
    this.lastUnit.set(plan, unit)
    return line
  }

  lastUnitOf(plan: Plan): Unit | undefined {
    return this.lastUnit.get(plan)
  }

  grant(plan: Plan, name: string, type: 'boolean' | 'static', value?: string): void {
    const clean = name.replace(/^(?:a|an|the|access to)\s+/i, '').replace(/\s+only$/i, '').trim()
    const key = slug(clean)
    if (!clean || plan.grants.some((g) => g.key === key)) return
    plan.grants.push({ key, name: titled(clean), type, value })
    this.placed++
  }

  // ---- segments ----------------------------------------------------------------------------------------

  parse(description: string): void {
    for (const raw of segments(description)) this.segment(raw)
  }

  private segment(raw: string): void {
    let text = raw.trim().replace(/^[-*•]\s+/, '')
    if (!text) return
    let plan: Plan | undefined
    let cue = false
    // "Pro: …", "Pro plan - …", "The Enterprise tier: …"
    const header = new RegExp(`^(?:[Tt]he\\s+)?${NAME}(\\s+(?:[Pp]lan|[Tt]ier|[Pp]ackage|[Ee]dition))?\\s*(?::|\\s[-–—]\\s)\\s*(.*)$`).exec(text)
    if (header && (header[2] || this.isPlanName(header[1]))) {
      plan = this.current = this.plan(header[1])
      text = header[3]
      cue = true
    } else {
      const lead = /^(?:features?|includes?|including|extras?|add-?ons?)\s*:\s*(.*)$/i.exec(text)
      if (lead) {
        text = lead[1]
        cue = true
      }
    }
    // "The Pro plan costs $49/month"
    const inline = new RegExp(`\\b(?:[Tt]he\\s+)?${NAME}\\s+(?:plan|tier)\\b\\s*(?:is|costs?|at|for)?\\s*`).exec(text)
    if (!plan && inline && (/^[A-Z]/.test(inline[1]) || this.isPlanName(inline[1])) && !/^(?:this|that|each|every|a|an|per|any|our|your|the)$/i.test(inline[1])) {
      plan = this.current = this.plan(inline[1])
      text = (text.slice(0, inline.index) + ' ' + text.slice(inline.index + inline[0].length)).trim()
    }
    // "Enterprise adds SSO and audit logs", "Pro includes everything in Starter plus …"
    const verb = new RegExp(`^(?:[Tt]he\\s+)?${NAME}(?:\\s+(?:plan|tier))?\\s+(?:also\\s+)?(?:adds?|gets?|includes?|has|have|offers?|comes with|unlocks?)\\s+(.*)$`).exec(text)
    if (!plan && verb && this.isPlanName(verb[1])) {
      plan = this.plan(verb[1])
      text = verb[2]
      cue = true
    }
    // "… on Enterprise", "… in the Pro plan", "… (Enterprise only)", "… for Business customers"
    const scoped =
      new RegExp(`^(.*?)\\s*\\(\\s*${NAME}(?:\\s+(?:plan|tier))?\\s+only\\s*\\)\\s*$`).exec(text) ??
      new RegExp(`^(.*?)\\s+(?:is\\s+|are\\s+)?(?:only\\s+)?(?:available\\s+)?(?:included\\s+)?(?:on|in|for|with)\\s+(?:the\\s+)?${NAME}(?:\\s+(?:plan|tier|customers|users|accounts|subscribers))?(?:\\s+only)?\\s*$`).exec(text)
    if (scoped && this.isPlanName(scoped[2])) {
      plan = this.plan(scoped[2])
      text = scoped[1]
      cue = true
    }
    const everything = /\beverything\s+(?:in|from|of)\s+(?:the\s+)?([A-Za-z][\w+]*)(?:\s+(?:plan|tier))?,?\s*(?:plus|and|\+)?\s*/i.exec(text)
    if (everything && this.isPlanName(everything[1])) {
      ;(plan ?? this.current ?? this.defaultPlan()).inherits.push(everything[1])
      text = (text.slice(0, everything.index) + text.slice(everything.index + everything[0].length)).trim()
      cue = true
      this.placed++
    }
    const volume = /\bvolume\b|\ball units\b|\bentire usage\b/i.test(raw)
    let target = plan ?? this.current ?? this.defaultPlan()
    // After a placed phrase, a short noun phrase in the same list is a feature ("$49/month, SSO, audit logs").
    let listed = false
    for (const phrase of phrases(text)) {
      // "Starter $19/mo, Pro $49/mo": a plan's name before its price switches to that plan.
      const named = new RegExp(`^(?:[Tt]he\\s+)?${NAME}(?:\\s+[Pp]lan)?\\s*(?:at|for|costs?|is|=|:)?\\s*(?=\\p{Sc}|[A-Z]{3}\\s?\\d|custom|contact)`, 'u').exec(phrase.text)
      if (named && this.isPlanName(named[1]) && phrase.text.length > named[0].length) {
        target = this.current = this.plan(named[1])
        phrase.text = phrase.text.slice(named[0].length)
        cue = true
      }
      if (['includes', 'including', 'with', 'plus'].includes(phrase.connector)) cue = true
      const before = this.placed
      const handled = this.phrase(target, phrase.text, { cue, listed, volume, then: phrase.connector === 'then' })
      if (!handled) this.warn(phrase.text, 'not understood: left out', true)
      else if (this.placed > before) listed = true
    }
  }

  // ---- phrases -----------------------------------------------------------------------------------------

  /** Places one phrase on `plan`; false when nothing in it could be read. */
  private phrase(plan: Plan, text: string, ctx: { cue: boolean; listed: boolean; volume: boolean; then: boolean }): boolean {
    const lower = text.toLowerCase().trim()
    if (!lower) return true
    if (/\b(?:after that|thereafter|beyond that|above that|afterwards|over that)\b|\bafter$/.test(lower)) ctx = { ...ctx, then: true }
    if (/^(?:billed\s+|charged\s+)?(?:pro[- ]?rata|pro[- ]?rated)$/.test(lower)) {
      const last = this.lastSegment
      if (!last) return false
      last.proRata = true
      return true
    }
    if (this.trial(plan, lower)) return true
    if (/^custom$|\b(?:custom pric(?:e|es|ing)|contact (?:us|sales)|talk to (?:us|sales)|call us|get a quote|custom quote|price on request|let'?s talk)\b/.test(lower)) {
      this.warn(text, 'custom pricing is not a price: the plan gets none')
      return true
    }
    if (/\b(?:vat|sales tax|taxes|tax)\b/.test(lower) && !/\btax(?:es)? (?:forms?|reports?|filing)\b/.test(lower)) {
      this.warn(text, 'taxes are not prices: set them up as tax rates (/v1/taxes)')
      return true
    }
    const billed = /^(?:when\s+|if\s+)?(?:billed|paid|charged|invoiced)\s+(annually|yearly|per year|each year|every year|quarterly|monthly)$/.exec(lower)
    if (billed) return this.billedAs(plan, text, billed[1])
    const tokens = tokenize(text)
    if (tokens.some((t) => t.k === 'pct')) return this.percent(plan, text, tokens)
    const m = tokens.findIndex((t) => t.k === 'money')
    if (m >= 0) {
      if (tokens.filter((t) => t.k === 'money').length > 1) this.warn(text, 'only the first amount of this phrase was read: separate prices with commas', true)
      return this.priced(plan, text, tokens, m, ctx)
    }
    const minimum = /^(?:a\s+)?min(?:imum|\.)?\s+(?:of\s+)?(\d+)\s+(\w+)$/.exec(lower)
    if (minimum && isSeat(minimum[2])) {
      plan.minSeats = Number(minimum[1])
      this.placed++
      return true
    }
    // A bare amount where a price goes ("49 per month", "0.002 per call"): the description's currency.
    const bare = tokens.findIndex((_, i) => bareAmount(tokens, i))
    if (bare >= 0 && !/\b(?:included|includes|free|up to)\b/.test(lower)) return this.priced(plan, text, tokens, bare, ctx)
    if (this.limit(plan, text, tokens, ctx)) return true
    const unlimited = /^unlimited\s+(.+)$/.exec(lower)
    if (unlimited) return this.unlimited(plan, text.trim().slice('unlimited'.length).trim())
    const staticValue = /^([A-Za-z][\w '&/-]{0,40}?)\s*:\s*(.{1,80})$/.exec(text.trim())
    if (staticValue) {
      this.grant(plan, staticValue[1], 'static', staticValue[2].trim())
      return true
    }
    const words = text.trim().split(/\s+/)
    const name = !words.some((w) => NOT_IN_FEATURE_NAMES.has(w.toLowerCase()) || periodNoun(w) || periodAdverb(w))
    if (name && ((ctx.cue && words.length <= 6) || (ctx.listed && words.length <= 4))) {
      this.grant(plan, text.trim(), 'boolean')
      return true
    }
    return false
  }

  private trial(plan: Plan, lower: string): boolean {
    const m =
      /(\d+)\s*[- ]?\s*(day|week|month)s?\s*(?:-|\s)\s*(?:free\s+)?trial/.exec(lower) ??
      /(?:free\s+)?trial\s+(?:period\s+)?(?:of\s+|for\s+|:\s*)?(\d+)\s*[- ]?(day|week|month)s?/.exec(lower) ??
      /free\s+for\s+(?:the\s+first\s+)?(\d+)\s*(day|week|month)s?/.exec(lower)
    if (!m) return false
    const n = Number(m[1])
    plan.trialDays = m[2] === 'day' ? n : m[2] === 'week' ? n * 7 : n * 30
    if (m[2] === 'month') this.warn(lower, `a month of trial is taken as 30 days: ${plan.trialDays} days`)
    this.placed++
    return true
  }

  private billedAs(plan: Plan, text: string, how: string): boolean {
    const last = plan.fixed[plan.fixed.length - 1]
    if (!last) return false
    const annual = !['quarterly', 'monthly'].includes(how)
    if (annual && last.period === 'MONTHLY' && last.count === 1) {
      last.money = { ...last.money, amount: last.money.amount.times(12) }
      last.period = 'ANNUAL'
    } else if (how === 'quarterly' && last.period === 'MONTHLY' && last.count === 1) {
      last.money = { ...last.money, amount: last.money.amount.times(3) }
      last.period = 'QUARTERLY'
    } else {
      this.warn(text, 'this billing period does not follow from the price before it: left out', true)
    }
    return true
  }

  private percent(plan: Plan, text: string, tokens: Token[]): boolean {
    const pct = tokens.find((t) => t.k === 'pct')!
    const words = tokens.filter((t) => isWord(t)).map((t) => (t as Extract<Token, { k: 'word' }>).w)
    if (words.some((w) => ['sla', 'uptime', 'availability'].includes(w.toLowerCase()))) {
      const name = words.filter((w) => !['guaranteed', 'a', 'an', 'the', 'of'].includes(w.toLowerCase())).join(' ')
      this.grant(plan, name || 'SLA', 'static', pct.text)
      return true
    }
    this.warn(text, 'percentage fees and discounts are not prices we make: only flat, package and tiered prices')
    return true
  }

  // ---- prices ------------------------------------------------------------------------------------------

  private priced(plan: Plan, text: string, tokens: Token[], m: number, ctx: { cue: boolean; volume: boolean; then: boolean }): boolean {
    const money = this.money(tokens[m] as Extract<Token, { k: 'money' | 'num' }>)
    const lower = text.toLowerCase()
    if (/\b(?:one[- ]?time|one[- ]off|set[- ]?up|onboarding|implementation|activation|installation|up[- ]?front|once)\b/.test(lower)) {
      const kind = /\b(set[- ]?up|onboarding|implementation|activation|installation)\b/.exec(lower)?.[1]
      plan.oneTime.push({ money, period: 'ONETIME', count: 1, name: kind ? `${titled(kind.replace(/[- ]/, ''))} fee` : 'One-time fee' })
      this.placed++
      return true
    }
    const suffix = readSuffix(tokens, m + 1)
    const prefix = readPrefix(tokens, m)
    const seatWord = suffix.unit && isSeat(suffix.unit[suffix.unit.length - 1]) && !suffix.active ? suffix.unit[suffix.unit.length - 1] : prefix.unit && !prefix.bound && isSeat(prefix.unit[prefix.unit.length - 1]) ? prefix.unit[prefix.unit.length - 1] : undefined
    if (seatWord) {
      plan.seat = { money, period: suffix.period ?? suffix.unitPeriod, word: singular(seatWord) }
      if (suffix.minimum) plan.minSeats = suffix.minimum
      this.placed++
      return true
    }
    if (suffix.period && !suffix.unit) {
      const period = suffix.billedAnnually && suffix.period.period === 'MONTHLY' ? { period: 'ANNUAL' as const, count: 1 } : suffix.period
      const amount = suffix.billedAnnually && suffix.period.period === 'MONTHLY' ? money.amount.times(12) : money.amount
      plan.fixed.push({ money: { ...money, amount }, period: period.period, count: period.count })
      this.placed++
      return true
    }
    // "Storage: $0.10 per GB": storage, measured in GB.
    const measured = suffix.unit?.length === 1 && isQuantity(suffix.unit[0]) && prefix.unit && !prefix.bound ? [suffix.unit[0], 'of', ...prefix.unit] : undefined
    const written = measured ?? suffix.unit ?? suffix.boundUnit ?? prefix.unit
    const words = written && suffix.active && !written.some((w) => /^(active|mau)$/i.test(w)) ? ['active', ...written] : written
    const bound = prefix.bound ?? suffix.bound
    const unit = words ? this.unit(words) : suffix.per > 1 || bound || ctx.then || suffix.each ? this.lastUnitOf(plan) : undefined
    if (!unit) {
      if (bound || suffix.per > 1 || ctx.then) {
        this.warn(text, 'which unit this price is for is not said: left out', true)
        return true
      }
      plan.fixed.push({ money, period: 'MONTHLY', count: 1 })
      this.warn(text, 'no billing period given: monthly assumed')
      this.placed++
      return true
    }
    const line = this.line(plan, unit)
    line.volume ||= ctx.volume
    const segment: Segment = { free: money.amount.isZero(), rate: money.amount, per: suffix.per, proRata: suffix.proRata, text, ...(prefix.bound ?? {}), ...(suffix.bound ?? {}) }
    if (suffix.afterFirst !== undefined && line.segments.length === 0) line.segments.push({ free: true, rate: new D(0), per: 1, proRata: false, size: suffix.afterFirst, text })
    // "$0.20 per 1,000 events over 1M": the units below the first bound are included.
    if (segment.from !== undefined && segment.from > 1 && line.segments.length === 0) line.segments.push({ free: true, rate: new D(0), per: 1, proRata: false, to: segment.from, text })
    line.segments.push(segment)
    this.lastSegment = segment
    this.placed++
    return true
  }

  // ---- allowances and limits ---------------------------------------------------------------------------

  /** "includes 10k API calls", "1M tokens free", "up to 5 projects", "first 1,000 calls free", "5 seats included". */
  private limit(plan: Plan, text: string, tokens: Token[], ctx: { cue: boolean; volume: boolean }): boolean {
    const n = tokens.findIndex((t) => t.k === 'num')
    if (n < 0) return false
    let i = n + 1
    if (isWord(tokens[i], 'free', 'extra', 'additional', 'included')) i++
    const unit = readUnit(tokens, i)
    if (!unit) return false
    const count = whole((tokens[n] as Extract<Token, { k: 'num' }>).value)
    if (count === undefined) {
      this.warn(text, 'a limit must be a whole number of units: left out', true)
      return true
    }
    const after = readPeriodAt(tokens, unit.end)
    const last = unit.words[unit.words.length - 1]
    if (isSeat(last) && !tokens.some((t) => isWord(t, 'active'))) {
      plan.includedSeats = { count, word: singular(last) }
      this.placed++
      return true
    }
    if (isGauge(last)) {
      this.grant(plan, pluralPhrase(unit.words), 'static', String(count))
      return true
    }
    const u = this.unit(unit.words)
    const line = this.line(plan, u)
    line.volume ||= ctx.volume
    line.segments.push({ free: true, rate: new D(0), per: 1, proRata: false, size: count, period: after?.period, allowance: true, text })
    this.placed++
    return true
  }

  private unlimited(plan: Plan, rest: string): boolean {
    const words = rest.split(/\s+/)
    const last = words[words.length - 1]
    if (isGauge(last) || isSeat(last)) {
      this.grant(plan, pluralPhrase(words), 'static', 'unlimited')
      return true
    }
    this.line(plan, this.unit(words))
    this.placed++
    return true
  }

  // ---- the configuration -------------------------------------------------------------------------------

  build(): PricingConfig {
    const currency = this.currency()
    const meters: MeterDraft[] = []
    const features: FeatureDraft[] = []
    const feature = (draft: FeatureDraft) => {
      if (!features.some((f) => f.lookup_key === draft.lookup_key)) features.push(draft)
    }
    const plans: PlanDraft[] = []
    const keys = new Set<string>()
    for (const plan of this.plans) {
      const draft = this.buildPlan(plan, currency, meters, feature)
      if (!plan.explicit && draft.prices.length === 0 && draft.entitlements.length === 0) continue
      let key = slug(plan.name)
      for (let n = 2; keys.has(key); n++) key = `${slug(plan.name)}_${n}`
      keys.add(key)
      plans.push({ name: draft.name, lookup_key: key, prices: draft.prices, entitlements: draft.entitlements })
    }
    for (const plan of this.plans) {
      const draft = plans.find((p) => p.name === plan.name)
      for (const from of plan.inherits) {
        const source = plans.find((p) => p.name.toLowerCase() === from.toLowerCase())
        if (!source || !draft) {
          this.warn(`everything in ${from}`, `no plan ${from} to take features from: left out`, true)
          continue
        }
        for (const e of source.entitlements) if (!draft.entitlements.some((x) => x.feature_ref === e.feature_ref)) draft.entitlements.push({ ...e })
      }
    }
    for (const plan of plans) {
      if (plan.prices.length === 0) this.warn(plan.name, `plan ${plan.name} has no price: add one before subscribing customers to it`)
    }
    if (plans.length === 0 || (plans.every((p) => p.prices.length === 0) && features.length === 0)) {
      throw new AppError('validation_error', 'nothing in the description could be placed as a price, meter or feature', {
        description: NOTHING_PLACED,
        warnings: this.warnings,
      })
    }
    return { currency, meters, features, plans, warnings: this.warnings }
  }

  private currency(): string {
    if (this.currencies.size > 1) {
      const list = [...this.currencies].join(', ')
      throw validationError('currency', `the description uses ${list}: describe one currency at a time`)
    }
    const [named] = this.currencies
    const given = this.options.currency?.toUpperCase()
    if (named && given && named !== given) throw validationError('currency', `the description is in ${named}, not ${given}`)
    const currency = named ?? given
    const priced = this.plans.some((p) => p.fixed.length + p.oneTime.length > 0 || p.seat || p.usage.some((l) => l.segments.some((s) => !s.free)) || /^free$/i.test(p.name))
    if (!currency && (priced || this.bareAmounts > 0)) throw validationError('currency', 'no currency given: write $49 or 49 USD, or send currency')
    return currency ?? 'USD'
  }

  private buildPlan(plan: Plan, currency: string, meters: MeterDraft[], feature: (f: FeatureDraft) => void): Omit<PlanDraft, 'lookup_key'> {
    const prices: PriceDraft[] = []
    const entitlements: EntitlementDraft[] = []
    const base = { currency } as const
    const amount = (d: Decimal) => d.toFixed()
    const periodsSeen = new Set<string>()
    for (const f of plan.fixed) {
      const key = `${f.period}×${f.count}`
      if (periodsSeen.has(key)) this.warn(f.money.text, `plan ${plan.name} has more than one ${f.period} price: a subscription pays each of them`)
      periodsSeen.add(key)
      prices.push({ ...base, type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: f.period, ...(f.count > 1 && { billing_period_count: f.count }), amount: amount(f.money.amount) })
    }
    if (plan.fixed.length === 0 && !plan.seat && /^free$/i.test(plan.name) && plan.usage.every((l) => l.segments.every((s) => s.free))) {
      prices.push({ ...base, type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0' })
      this.warn(plan.name, `plan ${plan.name}: a monthly price of 0 is added so customers can subscribe to it`)
    }
    const recurring = [...new Set(plan.fixed.filter((f) => f.period !== 'ONETIME').map((f) => `${f.period}:${f.count}`))].map((k) => {
      const [period, count] = k.split(':')
      return { period: period as BillingPeriod, count: Number(count) }
    })
    if (plan.seat) {
      const seatName = titled(plan.seat.word)
      const period = plan.seat.period ?? recurring[0]
      if (!period) this.warn(plan.seat.money.text, `no billing period for the ${plan.seat.word} price: monthly assumed`)
      const p = period ?? { period: 'MONTHLY' as const, count: 1 }
      const terms = { ...base, type: 'FIXED' as const, billing_period: p.period, ...(p.count > 1 && { billing_period_count: p.count }), display_name: seatName }
      const seatPrice: PriceDraft = plan.includedSeats
        ? { ...terms, billing_model: 'TIERED', tier_mode: 'SLAB', tiers: [{ up_to: plan.includedSeats.count, unit_amount: '0' }, { up_to: null, unit_amount: amount(plan.seat.money.amount) }] }
        : { ...terms, billing_model: 'FLAT_FEE', amount: amount(plan.seat.money.amount) }
      if (plan.minSeats) seatPrice.min_quantity = String(plan.minSeats)
      prices.push(seatPrice)
      if (!recurring.some((r) => r.period === p.period && r.count === p.count)) recurring.push(p)
    } else if (plan.includedSeats) {
      plan.grants.push({ key: slug(pluralWord(plan.includedSeats.word)), name: titled(pluralWord(plan.includedSeats.word)), type: 'static', value: String(plan.includedSeats.count) })
    }
    if (plan.trialDays) {
      const fixed = prices.filter((p) => p.type === 'FIXED' && p.billing_period !== 'ONETIME')
      if (fixed.length === 0) this.warn(`${plan.trialDays}-day trial`, `plan ${plan.name}: a trial needs a recurring fixed price; none to put it on`)
      for (const p of fixed) p.trial_period_days = plan.trialDays
    }
    for (const f of plan.oneTime) prices.push({ ...base, type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'ONETIME', amount: amount(f.money.amount), display_name: f.name })
    const periods = recurring.length > 0 ? recurring : [{ period: 'MONTHLY' as BillingPeriod, count: 1 }]
    for (const line of plan.usage) {
      const meter = meterOf(line.unit)
      if (!meters.some((m) => m.ref === meter.ref)) meters.push(meter)
      const ref = slug(line.unit.name)
      feature({ ref, name: line.unit.name, type: 'metered', lookup_key: ref, meter_ref: meter.ref, unit_singular: singularPhrase(line.unit.name), unit_plural: line.unit.name })
      const usage = this.compileUsage(plan, line)
      for (const p of usage.prices) {
        const { billing_model, ...amounts } = p
        for (const period of periods) {
          prices.push({ ...base, type: 'USAGE', billing_model, billing_period: period.period, ...(period.count > 1 && { billing_period_count: period.count }), ...amounts, meter_ref: meter.ref, display_name: line.unit.name } as PriceDraft)
        }
      }
      if (usage.allowance !== undefined && periods.length > 1) {
        this.warn(line.unit.name, `plan ${plan.name}: the allowance of ${usage.allowance} ${line.unit.name} applies per billing period, whichever period a subscription takes`)
      }
      const resetFrom = line.segments.find((s) => s.period)?.period ?? periods[0]
      entitlements.push({
        feature_ref: ref,
        usage_limit: usage.allowance ?? null,
        usage_reset_period: resetFrom.count === 1 ? (resetFrom.period as ResetPeriod) : 'MONTHLY',
        is_soft_limit: usage.allowance !== undefined && usage.prices.length > 0,
      })
    }
    for (const g of plan.grants) {
      feature({ ref: g.key, name: g.name, type: g.type, lookup_key: g.key })
      entitlements.push(g.type === 'static' ? { feature_ref: g.key, static_value: g.value! } : { feature_ref: g.key, is_enabled: true })
    }
    return { name: plan.name, prices, entitlements }
  }

  /** A unit's segments as an allowance (leading free units) and one price: flat, package or tiered. */
  private compileUsage(plan: Plan, line: UsageLine): { allowance?: number; prices: Partial<PriceDraft>[] } {
    const where = `${line.unit.name} on plan ${plan.name}`
    const bounded: (Segment & { end: number | null })[] = []
    let cursor = 0
    const allowances = line.segments.filter((s) => s.allowance)
    if (allowances.length > 1) throw validationError('description', `${where} has ${allowances.length} allowances: say one`)
    const ordered = [...allowances, ...line.segments.filter((s) => !s.allowance)]
    ordered.forEach((s, i) => {
      const last = i === ordered.length - 1
      let start = s.from
      if (start !== undefined) {
        if (start === cursor + 1 || (start === 1 && cursor === 0)) start = cursor
        if (start > cursor) throw validationError('description', `the tiers of ${where} leave a gap between ${cursor} and ${start}`)
        if (start < cursor) throw validationError('description', `the tiers of ${where} overlap at ${start}`)
      }
      let end: number | null = null
      if (s.to !== undefined) end = s.to
      else if (s.size !== undefined) end = cursor + s.size
      if (end !== null && end <= cursor) throw validationError('description', `the tiers of ${where} overlap: ${end} is not above ${cursor}`)
      if (end === null && !last) throw validationError('description', `the tiers of ${where} overlap: "${s.text.trim()}" has no end but more follow`)
      bounded.push({ ...s, end })
      cursor = end ?? cursor
    })
    if (bounded.length === 0) return { prices: [] }
    let allowance: number | undefined
    let rest = bounded
    if (!line.volume && bounded[0].free && bounded[0].end !== null) {
      allowance = bounded[0].end
      rest = bounded.slice(1).map((s) => ({ ...s, end: s.end === null ? null : s.end - allowance! }))
    }
    if (rest.length === 0) return { allowance, prices: [] }
    if (rest[rest.length - 1].end !== null) {
      const last = rest[rest.length - 1]
      this.warn(last.text, `no price is given beyond ${last.end! + (allowance ?? 0)} ${line.unit.name}: the last rate applies beyond it`)
      rest[rest.length - 1] = { ...last, end: null }
    }
    const perUnit = (s: Segment) => {
      const r = s.rate.div(s.per)
      if (!r.times(s.per).eq(s.rate)) throw validationError('description', `${s.rate.toFixed()} per ${s.per} ${line.unit.name} is no exact price per unit`)
      return r.toFixed()
    }
    if (rest.length === 1) {
      const s = rest[0]
      if (s.per > 1 && !s.proRata) {
        return { allowance, prices: [{ billing_model: 'PACKAGE', amount: s.rate.toFixed(), transform_quantity: { divide_by: s.per, round: 'up' } }] }
      }
      return { allowance, prices: [{ billing_model: 'FLAT_FEE', amount: perUnit(s) }] }
    }
    const tiers = rest.map((s) => ({ up_to: s.end, unit_amount: perUnit(s) }))
    return { allowance, prices: [{ billing_model: 'TIERED', tier_mode: line.volume ? 'VOLUME' : 'SLAB', tiers }] }
  }
}

// ---- reading phrases -----------------------------------------------------------------------------------

/** Sentences, ";", lines and bullets; a "." ends a sentence only before a space or the end ("$0.002" stays). */
function segments(text: string): string[] {
  return text
    .replace(/\u00a0|\u2009|\u202f/g, ' ')
    .split(/\r?\n|;|•|\.(?=\s|$)/)
    .map((s) => s.trim())
    .filter(Boolean)
}

const CONNECTOR = /\s*,(?!\d)\s*(?:(and|then|but|or|plus)\s+)?|\s+(and then|then|and|or|plus|with|but)\s+|\s+\+\s+|\s+(?=(?:includ(?:es|ing|e)|comes with)\b)/gi

/** The phrases of a segment, each with the word that joined it to the one before ("then", "with", …). */
function phrases(text: string): { text: string; connector: string }[] {
  const prepared = text
    .replace(/\b(?:which|that)\s+(includes?)\b/gi, '$1')
    .replace(/\bcomes?\s+with\b/gi, 'includes')
    .replace(/\bbetween\s+([\d.,]+\s*[kKmM]?)\s+and\s+([\d.,]+\s*[kKmM]?)/gi, '$1-$2').replace(/\bfrom\s+([\d.,]+\s*[kKmM]?)\s+to\s+([\d.,]+\s*[kKmM]?)/gi, '$1-$2')
  const out: { text: string; connector: string }[] = []
  let last = 0
  let connector = ''
  for (const m of prepared.matchAll(CONNECTOR)) {
    out.push({ text: prepared.slice(last, m.index), connector })
    connector = (m[1] ?? m[2] ?? (m[0].includes('+') ? 'plus' : m[0].includes(',') ? ',' : 'includes')).toLowerCase()
    if (connector === 'and then') connector = 'then'
    last = m.index! + m[0].length
  }
  out.push({ text: prepared.slice(last), connector })
  return out
    .map((p) => {
      const then = /^(?:then|thereafter|afterwards?)\s+/i.exec(p.text)
      if (then) return { text: p.text.slice(then[0].length), connector: 'then' }
      const cue = /^(?:includes?|including|with|plus)\s+/i.exec(p.text)
      return cue ? { text: p.text.slice(cue[0].length), connector: 'includes' } : p
    })
    .filter((p) => p.text.trim())
}

function readPeriodAt(tokens: Token[], i: number): { period: Period; end: number } | undefined {
  const t = tokens[i]
  const next = tokens[i + 1]
  const noun = (x: Token | undefined) => (isWord(x) ? periodNoun(x.l) : undefined)
  if (isSym(t, '/') && noun(next)) return { period: { period: noun(next)!, count: 1 }, end: i + 2 }
  if (isSym(t, '/') && next?.k === 'num' && noun(tokens[i + 2])) return { period: everyPeriod(next.value.toNumber(), noun(tokens[i + 2])!), end: i + 3 }
  if (isWord(t, 'per', 'a', 'an', 'each', 'every') && noun(next)) return { period: { period: noun(next)!, count: 1 }, end: i + 2 }
  if (isWord(t, 'every') && next?.k === 'num' && noun(tokens[i + 2])) return { period: everyPeriod(next.value.toNumber(), noun(tokens[i + 2])!), end: i + 3 }
  if (isWord(t, 'billed', 'paid', 'charged') && isWord(next) && periodAdverb(next.l)) return { period: { period: periodAdverb(next.l)!, count: 1 }, end: i + 2 }
  if (isWord(t) && periodAdverb(t.l)) return { period: { period: periodAdverb(t.l)!, count: 1 }, end: i + 1 }
  return undefined
}

/** A unit phrase at `i`: words up to a stop word, with "of" inside ("GB of storage"); at most four words. */
function readUnit(tokens: Token[], i: number): { words: string[]; end: number } | undefined {
  const words: string[] = []
  let j = i
  while (j < tokens.length && words.length < 4) {
    const t = tokens[j]
    if (!isWord(t)) break
    if (t.l === 'of' && words.length > 0 && isWord(tokens[j + 1]) && !UNIT_STOP.has((tokens[j + 1] as Extract<Token, { k: 'word' }>).l)) {
      words.push(t.w)
      j++
      continue
    }
    if (UNIT_STOP.has(t.l) || periodNoun(t.l) || periodAdverb(t.l) || magnitude(t.l) || ['overage', 'overages', 'usage', 'price', 'pricing', 'fee', 'rate'].includes(t.l)) break
    words.push(t.w)
    j++
  }
  return words.length > 0 ? { words, end: j } : undefined
}

/** A number written where a price goes: "49/month", "49 per month", "0.002 per call", "49 monthly" (not "24/7"). */
function bareAmount(tokens: Token[], i: number): boolean {
  if (tokens[i]?.k !== 'num') return false
  const next = tokens[i + 1]
  if (isSym(next, '/')) return isWord(tokens[i + 2])
  if (isWord(next, 'per')) return isWord(tokens[i + 2]) || (tokens[i + 2]?.k === 'num' && isWord(tokens[i + 3]))
  return isWord(next, 'monthly', 'annually', 'yearly', 'weekly', 'daily', 'quarterly')
}

interface Bound {
  size?: number
  from?: number
  to?: number
  open?: boolean
}

/** What follows an amount: a period, or the unit it is per (with a package size), and modifiers. */
function readSuffix(tokens: Token[], i: number) {
  const out: {
    period?: Period
    unit?: string[]
    unitPeriod?: Period
    per: number
    proRata: boolean
    active: boolean
    each: boolean
    billedAnnually: boolean
    minimum?: number
    afterFirst?: number
    bound?: Bound
    boundUnit?: string[]
  } = { per: 1, proRata: false, active: false, each: false, billedAnnually: false }
  let j = i
  if (isWord(tokens[j], 'each')) {
    out.each = true
    j++
  }
  const period = readPeriodAt(tokens, j)
  if (period) {
    out.period = period.period
    j = period.end
    // "$25/month per workspace"
    if (isWord(tokens[j], 'per') || isSym(tokens[j], '/')) {
      const unit = readUnit(tokens, j + 1)
      if (unit) {
        out.unit = unit.words
        j = unit.end
      }
    }
  } else if (isWord(tokens[j], 'per', 'a', 'an') || isSym(tokens[j], '/') || (isWord(tokens[j], 'for') && isWord(tokens[j + 1], 'each', 'every'))) {
    j += isWord(tokens[j], 'for') ? 2 : 1
    while (isWord(tokens[j], 'additional', 'extra', 'active', 'monthly', 'new')) {
      if (tokens[j].k === 'word' && (tokens[j] as Extract<Token, { k: 'word' }>).l === 'active') out.active = true
      if (isWord(tokens[j], 'monthly') && !isWord(tokens[j + 1], 'active')) break
      j++
    }
    const n = tokens[j]
    if (n?.k === 'num') {
      out.per = whole(n.value) ?? 1
      j++
    } else if (isWord(n) && magnitude(n.l) && n.l.length > 1) {
      out.per = magnitude(n.l)!
      j++
    }
    const unit = readUnit(tokens, j)
    if (unit) {
      out.unit = unit.words
      j = unit.end
      if (out.unit.some((w) => w.toLowerCase() === 'mau')) out.active = true
      const after = readPeriodAt(tokens, j)
      if (after) {
        out.unitPeriod = after.period
        j = after.end
      }
    }
  }
  // Modifiers anywhere after.
  for (let k = j; k < tokens.length; k++) {
    const t = tokens[k]
    const num = (x: Token | undefined) => (x?.k === 'num' ? whole(x.value) : undefined)
    if (isWord(t, 'billed', 'paid') && isWord(tokens[k + 1], 'annually', 'yearly')) out.billedAnnually = true
    if (isWord(t, 'pro') && isWord(tokens[k + 1], 'rata')) out.proRata = true
    if (isWord(t, 'prorated', 'pro-rated', 'pro-rata')) out.proRata = true
    if (isWord(t, 'minimum', 'min') && num(tokens[k + 1]) !== undefined) out.minimum = num(tokens[k + 1])
    if (isWord(t, 'minimum', 'min') && isWord(tokens[k + 1], 'of') && num(tokens[k + 2]) !== undefined) out.minimum = num(tokens[k + 2])
    if (isWord(t, 'blocks', 'packs', 'packages', 'bundles', 'increments', 'block', 'pack', 'package', 'bundle') && isWord(tokens[k + 1], 'of') && num(tokens[k + 2])) {
      out.per = num(tokens[k + 2])!
      out.proRata = false
    }
    const unitAfter = (at: number) => readUnit(tokens, at)?.words
    if (isWord(t, 'first') && num(tokens[k + 1]) !== undefined) {
      if (isWord(tokens[k - 1], 'after') || (isWord(tokens[k - 1], 'the') && isWord(tokens[k - 2], 'after'))) out.afterFirst = num(tokens[k + 1])
      else out.bound = { size: num(tokens[k + 1]) }
      out.boundUnit = unitAfter(k + 2)
    }
    if (isWord(t, 'next') && num(tokens[k + 1]) !== undefined) {
      out.bound = { size: num(tokens[k + 1]) }
      out.boundUnit = unitAfter(k + 2)
    }
    if (isWord(t, 'up') && isWord(tokens[k + 1], 'to') && num(tokens[k + 2]) !== undefined) {
      out.bound = { to: num(tokens[k + 2]) }
      out.boundUnit = unitAfter(k + 3)
    }
    if (isWord(t, 'over', 'above', 'beyond') && num(tokens[k + 1]) !== undefined) {
      out.bound = { from: num(tokens[k + 1]), open: true }
      out.boundUnit = unitAfter(k + 2)
    }
  }
  return out
}

const BOUND_SKIP = new Set(['at', 'for', 'cost', 'costs', 'is', 'are', 'billed', 'charged', 'priced', 'each', 'per'])

/** What precedes an amount: a tier bound ("first 10,000 calls at", "1,001-10,000:", "over 10,000") and the unit. */
function readPrefix(tokens: Token[], m: number): { bound?: Bound; unit?: string[] } {
  const num = (x: Token | undefined) => (x?.k === 'num' ? whole(x.value) : undefined)
  // The unit after the bound ("first 10,000 calls at"), else before it ("SMS 1-1,000: $0.05").
  const unitBefore = (at: number) => {
    let start = at - 1
    while (start >= 0 && isWord(tokens[start]) && !UNIT_STOP.has((tokens[start] as Extract<Token, { k: 'word' }>).l) && at - start <= 4) start--
    const unit = readUnit(tokens, start + 1)
    return unit && unit.end === at ? unit.words : undefined
  }
  for (let k = m - 1; k >= 0; k--) {
    const t = tokens[k]
    const unitAfter = (at: number) => readUnit(tokens, at)?.words ?? unitBefore(k)
    if (isWord(t, 'first', 'next') && num(tokens[k + 1]) !== undefined) return { bound: { size: num(tokens[k + 1]) }, unit: unitAfter(k + 2) }
    if (t.k === 'num' && isSym(tokens[k + 1], '-') && num(tokens[k + 2]) !== undefined && num(t) !== undefined) return { bound: { from: num(t), to: num(tokens[k + 2]) }, unit: unitAfter(k + 3) }
    if (t.k === 'num' && isSym(tokens[k + 1], '+') && num(t) !== undefined) return { bound: { from: num(t), open: true }, unit: unitAfter(k + 2) }
    if (isWord(t, 'to') && isWord(tokens[k - 1], 'up') && num(tokens[k + 1]) !== undefined) return { bound: { to: num(tokens[k + 1]) }, unit: unitAfter(k + 2) }
    if ((isWord(t, 'under', 'below', 'upto') || isSym(t, '<')) && num(tokens[k + 1]) !== undefined) return { bound: { to: num(tokens[k + 1]) }, unit: unitAfter(k + 2) }
    if ((isWord(t, 'over', 'above', 'beyond', 'after') || isSym(t, '>')) && num(tokens[k + 1]) !== undefined) return { bound: { from: num(tokens[k + 1]), open: true }, unit: unitAfter(k + 2) }
    if (isWord(t, 'than') && isWord(tokens[k - 1], 'more') && num(tokens[k + 1]) !== undefined) return { bound: { from: num(tokens[k + 1]), open: true }, unit: unitAfter(k + 2) }
  }
  // "API calls at $0.002 each", "Storage: $0.10 per GB"
  let k = m - 1
  while (k >= 0 && (isSym(tokens[k], ':') || isSym(tokens[k], '@') || isSym(tokens[k], '=') || (isWord(tokens[k]) && BOUND_SKIP.has((tokens[k] as Extract<Token, { k: 'word' }>).l)))) k--
  let start = k
  while (start >= 0 && isWord(tokens[start]) && !UNIT_STOP.has((tokens[start] as Extract<Token, { k: 'word' }>).l) && k - start < 4) start--
  const unit = readUnit(tokens, start + 1)
  return unit && unit.end === k + 1 ? { unit: unit.words } : {}
}

function meterOf(unit: Unit): MeterDraft {
  const aggregation = unit.kind === 'count' ? { type: 'COUNT' as const } : unit.kind === 'unique' ? { type: 'COUNT_UNIQUE' as const, field: unit.field! } : { type: 'SUM' as const, field: unit.field! }
  return { ref: unit.event, name: unit.name, event_name: unit.event, aggregation }
}

function pluralWord(word: string): string {
  const w = word
  if (/[^aeiou]y$/i.test(w)) return `${w.slice(0, -1)}ies`
  if (/(s|x|ch|sh)$/i.test(w)) return /[A-Z]$/.test(w) ? w : `${w}es`
  if (/^[A-Z]{2,}$/.test(w)) return w
  return `${w}s`
}

/** "API call" → "API calls"; a phrase already plural stays. */
function pluralPhrase(words: string[]): string {
  const last = words[words.length - 1]
  const lastPlural = singular(last) !== last.toLowerCase() || /^[A-Z]{2,}s?$/.test(last) ? last : pluralWord(last)
  return titledUnit([...words.slice(0, -1), lastPlural].join(' '))
}

function singularPhrase(name: string): string {
  const words = name.split(' ')
  const last = words[words.length - 1]
  const one = /^[A-Z]{2,}$/.test(last) ? last : singular(last)
  return [...words.slice(0, -1), last[0] === last[0].toUpperCase() && !/^[A-Z]{2,}$/.test(last) ? titled(one) : one].join(' ')
}

/** Units keep their capitals ("API calls", "GB"); a lower-case first word is capitalised ("Tokens"). */
const titledUnit = (text: string): string => titled(text)

/**
 * Parses a plain-language pricing description into a configuration ready to create (see config.ts).
 * Throws validation_error when the description is empty, too long, in a currency we do not know, in
 * several currencies, has a negative amount or overlapping tiers, or names nothing that can be placed.
 */
export function parsePricingDescription(description: string, options: ParseOptions = {}): PricingConfig {
  const text = description.trim()
  if (!text) throw validationError('description', 'must not be empty')
  if (text.length > MAX_LENGTH) throw validationError('description', `must be at most ${MAX_LENGTH} characters`)
  const parser = new Parser(options)
  parser.parse(text)
  return parser.build()
}
