// A phrase of a pricing description as tokens: amounts of money (with their currency, or none for a
// bare amount), numbers with their magnitude, percentages, words and the signs that matter ("/", ":",
// "-", "+"). Unknown currencies and negative amounts are refused here, naming what was written.
import { validationError } from '../errors.ts'
import type { Decimal } from '../money.ts'
import { currencyWord, magnitude, plainNumber, symbolAt, unknownCurrency } from './lexicon.ts'

export type Token =
  | { k: 'money'; amount: Decimal; currency: string | null; text: string }
  | { k: 'num'; value: Decimal; text: string }
  | { k: 'pct'; value: Decimal; text: string }
  | { k: 'word'; w: string; l: string; text: string }
  | { k: 'sym'; s: string; text: string }

const NUMBER = /^(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+,\d{1,2}(?!\d)|\d+(?:\.\d+)?)/
const ATTACHED_MAGNITUDE = /^(?:mm|mn|bn|[kKmMbB])(?![A-Za-z])/
const WORD = /^[A-Za-z\u00C0-\u024F][A-Za-z0-9\u00C0-\u024F'’&_-]*/
const SIGNS = new Set(['/', ':', '-', '+', '(', ')', '@', '=', '<', '>', '~', '&', '|'])
const CURRENCY_SIGN = /\p{Sc}/u

/** A number at `i` with an attached ("10k") or following ("1.5 million") magnitude. */
function readNumber(text: string, i: number): { value: Decimal; end: number } | undefined {
  const m = NUMBER.exec(text.slice(i))
  if (!m) return undefined
  let value = plainNumber(m[0])
  if (!value) return undefined
  let end = i + m[0].length
  const attached = ATTACHED_MAGNITUDE.exec(text.slice(end))
  if (attached) {
    value = value.times(magnitude(attached[0])!)
    end += attached[0].length
  } else {
    const word = /^\s+([A-Za-z]+)\b/.exec(text.slice(end))
    const factor = word && ['thousand', 'million', 'billion', 'mil', 'mn', 'bn'].includes(word[1].toLowerCase()) ? magnitude(word[1]) : undefined
    if (factor) {
      value = value.times(factor)
      end += word![0].length
    }
  }
  return { value, end }
}

/** Is the word at `j` followed by what makes a preceding amount a price ("/", "per", "a month", the end)? */
function priceContext(text: string, j: number): boolean {
  return /^\s*(?:$|\/|per\b|a\b|an\b|each\b|every\b|monthly\b|yearly\b|annually\b|weekly\b|daily\b|[,;.)])/i.test(text.slice(j))
}

export function tokenize(text: string): Token[] {
  const out: Token[] = []
  let i = 0
  const previous = () => out[out.length - 1]
  while (i < text.length) {
    const c = text[i]
    if (/\s/.test(c)) {
      i++
      continue
    }
    // A minus sign before an amount, unless it ends a range ("1,001-10,000").
    if ((c === '-' || c === '−') && /^[-−]\s?(?:\p{Sc}|[A-Z]{3}\s?\d|\d)/u.test(text.slice(i)) && previous()?.k !== 'num' && previous()?.k !== 'money') {
      throw validationError('description', `amounts cannot be negative: "${text.slice(i, i + 12).trim()}"`)
    }
    const symbol = symbolAt(text, i)
    if (symbol) {
      let j = i + symbol.symbol.length
      while (text[j] === ' ') j++
      if (text[j] === '-' || text[j] === '−') throw validationError('description', `amounts cannot be negative: "${text.slice(i, j + 8).trim()}"`)
      const n = readNumber(text, j)
      if (n) {
        out.push({ k: 'money', amount: n.value, currency: symbol.currency, text: text.slice(i, n.end) })
        i = n.end
        continue
      }
      i += symbol.symbol.length
      continue
    }
    if (CURRENCY_SIGN.test(c) && c !== '¢') throw unknownCurrency(c)
    const n = /\d/.test(c) ? readNumber(text, i) : undefined
    if (n) {
      let j = n.end
      if (text[j] === '%') {
        out.push({ k: 'pct', value: n.value, text: text.slice(i, j + 1) })
        i = j + 1
        continue
      }
      // A currency after the amount: a symbol ("49€", "30¢"), a code or name ("49 EUR", "49 euros").
      let k = j
      while (text[k] === ' ') k++
      const after = symbolAt(text, k)
      if (after && !after.symbol.includes('$')) {
        out.push({ k: 'money', amount: n.value, currency: after.currency, text: text.slice(i, k + after.symbol.length) })
        i = k + after.symbol.length
        continue
      }
      if (text[k] === '¢') {
        out.push({ k: 'money', amount: n.value.div(100), currency: null, text: text.slice(i, k + 1) })
        i = k + 1
        continue
      }
      if (CURRENCY_SIGN.test(text[k] ?? '') && !after) throw unknownCurrency(text[k])
      const word = /^[A-Za-z.]+/.exec(text.slice(k))?.[0]?.replace(/\.$/, '')
      if (word) {
        const mark = currencyWord(word, priceContext(text, k + word.length))
        if (mark) {
          const amount = mark.cents ? n.value.div(100) : n.value
          out.push({ k: 'money', amount, currency: mark.currency, text: text.slice(i, k + word.length) })
          i = k + word.length
          continue
        }
      }
      out.push({ k: 'num', value: n.value, text: text.slice(i, j) })
      i = j
      continue
    }
    const w = WORD.exec(text.slice(i))
    if (w) {
      const word = w[0].replace(/[-'’]+$/, '')
      // A code before an amount: "EUR 49", "CHF 20"; an unknown one is refused.
      if (/^[A-Z]{3}$/.test(word) && /^\s?\d/.test(text.slice(i + word.length))) {
        const after = readNumber(text, i + word.length + (text[i + word.length] === ' ' ? 1 : 0))
        const mark = after ? currencyWord(word, priceContext(text, after.end)) : undefined
        if (mark?.currency && after) {
          out.push({ k: 'money', amount: after.value, currency: mark.currency, text: text.slice(i, after.end) })
          i = after.end
          continue
        }
      }
      out.push({ k: 'word', w: word, l: word.toLowerCase(), text: word })
      i += word.length || 1
      continue
    }
    if (SIGNS.has(c) || c === '–' || c === '—') {
      out.push({ k: 'sym', s: c === '–' || c === '—' ? '-' : c, text: c })
    }
    i++
  }
  return out
}

export const isWord = (t: Token | undefined, ...words: string[]): t is Extract<Token, { k: 'word' }> =>
  t?.k === 'word' && (words.length === 0 || words.includes(t.l))

export const isSym = (t: Token | undefined, s: string): boolean => t?.k === 'sym' && t.s === s

/** Whole numbers only: a limit or tier bound of 1.5 units is refused by the caller. */
export const whole = (d: Decimal): number | undefined => (d.isInteger() && d.lte(Number.MAX_SAFE_INTEGER) ? d.toNumber() : undefined)
