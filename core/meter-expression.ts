// Meter expressions (aggregation.expression): the value an event contributes, computed from its
// properties, e.g. `properties.input_tokens + properties.output_tokens * 3` or
// `properties.tier == "pro" ? properties.seconds * 2 : properties.seconds`. jsep parses the text into a
// syntax tree; this file walks it with exact decimals. Nothing is ever run as code: only the node kinds
// below exist, names are event properties, and the few functions are ours.
import jsep, { type Expression } from 'jsep'
import { D, type Decimal } from './money.ts'

type Value = Decimal | string | boolean

type Node = (properties: Record<string, unknown>) => Value

/** Why an event contributes no value (a property missing or not a number, a division by zero). */
export class ExpressionSkip extends Error {}

/** Places a computed value keeps (meter_usage.value is Decimal(38, 12)); a division is rounded half-even there. */
const PLACES = 12
const MAX_LENGTH = 1000
const MAX_NODES = 200

const ARITHMETIC = new Set(['+', '-', '*', '/', '%'])
const COMPARISON = new Set(['==', '!=', '===', '!==', '<', '<=', '>', '>='])

const FUNCTIONS: Record<string, { arity: [number, number]; apply: (args: Decimal[]) => Decimal }> = {
  min: { arity: [1, 20], apply: (a) => D.min(...a) },
  max: { arity: [1, 20], apply: (a) => D.max(...a) },
  abs: { arity: [1, 1], apply: ([x]) => x.abs() },
  ceil: { arity: [1, 1], apply: ([x]) => x.ceil() },
  floor: { arity: [1, 1], apply: ([x]) => x.floor() },
  round: { arity: [1, 2], apply: ([x, p]) => x.toDecimalPlaces(p ? p.toNumber() : 0, D.ROUND_HALF_UP) },
}

/** An event property as a value: JSON numbers and numeric strings are exact decimals. */
function propertyValue(name: string, raw: unknown): Value {
  if (raw === undefined || raw === null) throw new ExpressionSkip(`property ${name} is missing`)
  if (typeof raw === 'boolean') return raw
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw new ExpressionSkip(`property ${name} is not a finite number`)
    return new D(String(raw))
  }
  if (typeof raw === 'string') return /^\s*-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(raw) ? new D(raw.trim()) : raw
  throw new ExpressionSkip(`property ${name} is not a number, string or boolean`)
}

const isNumber = (v: Value): v is Decimal => D.isDecimal(v)

function number(v: Value, what: string): Decimal {
  if (!isNumber(v)) throw new ExpressionSkip(`${what} is not a number`)
  return v
}

function truthy(v: Value): boolean {
  if (typeof v === 'boolean') return v
  throw new ExpressionSkip('a condition is not true or false')
}

function equal(a: Value, b: Value): boolean {
  if (isNumber(a) && isNumber(b)) return a.eq(b)
  if (isNumber(a) || isNumber(b)) return String(a) === String(b)
  return a === b
}

function arithmetic(op: string, a: Decimal, b: Decimal): Decimal {
  if ((op === '/' || op === '%') && b.isZero()) throw new ExpressionSkip('division by zero')
  if (op === '+') return a.plus(b)
  if (op === '-') return a.minus(b)
  if (op === '*') return a.times(b)
  if (op === '/') return a.div(b).toDecimalPlaces(PLACES, D.ROUND_HALF_EVEN)
  return a.mod(b)
}

function compare(op: string, a: Value, b: Value): boolean {
  if (op === '==' || op === '===') return equal(a, b)
  if (op === '!=' || op === '!==') return !equal(a, b)
  const x = number(a, `the left side of ${op}`)
  const y = number(b, `the right side of ${op}`)
  return op === '<' ? x.lt(y) : op === '<=' ? x.lte(y) : op === '>' ? x.gt(y) : x.gte(y)
}

/** Thrown at compile time: the text is not an expression this evaluator takes. */
export class ExpressionError extends Error {}

function propertyName(node: Expression): string | undefined {
  if (node.type === 'Identifier') return node.name as string
  if (node.type === 'MemberExpression' && (node.object as Expression).type === 'Identifier' && (node.object as Expression).name === 'properties') {
    const p = node.property as Expression
    if (!node.computed && p.type === 'Identifier') return p.name as string
    if (node.computed && p.type === 'Literal' && typeof p.value === 'string') return p.value
  }
  return undefined
}

function compileNode(node: Expression, count: { n: number }): Node {
  if (++count.n > MAX_NODES) throw new ExpressionError(`is longer than ${MAX_NODES} terms`)
  switch (node.type) {
    case 'Literal': {
      const v = node.value
      if (typeof v === 'number') {
        const exact = new D(String(node.raw))
        return () => exact
      }
      if (typeof v === 'string' || typeof v === 'boolean') return () => v
      throw new ExpressionError(`${String(node.raw)} is not a number, string or boolean`)
    }
    case 'Identifier':
    case 'MemberExpression': {
      const name = propertyName(node)
      if (name === undefined || name === 'properties') throw new ExpressionError('names an event property as properties.name, properties["a name"] or name')
      // Own properties only: a name like constructor or __proto__ reads nothing of Object's.
      return (props) => propertyValue(name, Object.hasOwn(props, name) ? props[name] : undefined)
    }
    case 'UnaryExpression': {
      const arg = compileNode(node.argument as Expression, count)
      if (node.operator === '-') return (p) => number(arg(p), 'the operand of -').neg()
      if (node.operator === '+') return (p) => number(arg(p), 'the operand of +')
      if (node.operator === '!') return (p) => !truthy(arg(p))
      throw new ExpressionError(`takes no ${String(node.operator)} operator`)
    }
    case 'BinaryExpression': {
      const op = node.operator as string
      const left = compileNode(node.left as Expression, count)
      const right = compileNode(node.right as Expression, count)
      if (ARITHMETIC.has(op)) return (p) => arithmetic(op, number(left(p), `the left side of ${op}`), number(right(p), `the right side of ${op}`))
      if (COMPARISON.has(op)) return (p) => compare(op, left(p), right(p))
      if (op === '&&') return (p) => truthy(left(p)) && truthy(right(p))
      if (op === '||') return (p) => truthy(left(p)) || truthy(right(p))
      throw new ExpressionError(`takes no ${op} operator`)
    }
    case 'ConditionalExpression': {
      const test = compileNode(node.test as Expression, count)
      const yes = compileNode(node.consequent as Expression, count)
      const no = compileNode(node.alternate as Expression, count)
      return (p) => (truthy(test(p)) ? yes(p) : no(p))
    }
    case 'CallExpression': {
      const callee = node.callee as Expression
      const fn = callee.type === 'Identifier' && Object.hasOwn(FUNCTIONS, callee.name as string) ? FUNCTIONS[callee.name as string] : undefined
      if (!fn) throw new ExpressionError(`calls only ${Object.keys(FUNCTIONS).join(', ')}`)
      const args = (node.arguments as Expression[]).map((a) => compileNode(a, count))
      if (args.length < fn.arity[0] || args.length > fn.arity[1]) throw new ExpressionError(`${String(callee.name)} takes ${fn.arity[0]}${fn.arity[1] > fn.arity[0] ? ` to ${fn.arity[1]}` : ''} arguments`)
      return (p) => fn.apply(args.map((a, i) => number(a(p), `argument ${i + 1} of ${String(callee.name)}`)))
    }
    default:
      throw new ExpressionError(`takes no ${node.type}`)
  }
}

export type MeterExpression = (properties: Record<string, unknown>) => Decimal

/** The expression compiled; ExpressionError names what it does not take. Evaluating throws ExpressionSkip for an event it yields no number for. */
export function compileExpression(text: string): MeterExpression {
  if (text.length > MAX_LENGTH) throw new ExpressionError(`is longer than ${MAX_LENGTH} characters`)
  let tree: Expression
  try {
    tree = jsep(text)
  } catch (err) {
    throw new ExpressionError(`does not parse: ${(err as Error).message}`)
  }
  const root = compileNode(tree, { n: 0 })
  return (properties) => number(root(properties), 'the result')
}

const cache = new Map<string, MeterExpression>()

/** compileExpression, once per text (events resolve against the same few meters over and over). */
export function meterExpression(text: string): MeterExpression {
  let compiled = cache.get(text)
  if (!compiled) {
    compiled = compileExpression(text)
    if (cache.size > 1000) cache.clear()
    cache.set(text, compiled)
  }
  return compiled
}
