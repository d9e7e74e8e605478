// Values as ClickHouse SQL text. Long value lists are inlined: a query parameter travels in the URL of a server's HTTP
// request (about 1 MiB at most), too small for a batch's 10,000 event ids or a month of minute windows;
// SQL text goes in the request body, with max_query_size raised for it.

/** A DateTime64(3, 'UTC') literal as ClickHouse parses it in JSONEachRow and in query parameters. */
export const chDateTime = (d: Date): string => d.toISOString().replace('T', ' ').replace('Z', '')

/** ClickHouse's `YYYY-MM-DD hh:mm:ss.sss` (UTC) as a Date. */
export const fromChDateTime = (s: string): Date => new Date(`${s.replace(' ', 'T')}Z`)

/** A ClickHouse string literal: backslash and quote escaped, every other character as it is. */
export const sqlString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

export const sqlStringArray = (values: readonly string[]): string => `[${values.map(sqlString).join(',')}]`

export const sqlDateTimeArray = (dates: readonly Date[]): string => `[${dates.map((d) => `toDateTime64('${chDateTime(d)}', 3, 'UTC')`).join(',')}]`

/** Settings for a query carrying such lists. */
export const LONG_QUERY = { max_query_size: '134217728' } as const

const SCALAR = /^(?:U?Int(?:8|16|32|64|128|256))$/

/** A value as a literal of a query parameter's type: strings as they are, integers checked, others cast from their text. */
function paramLiteral(value: unknown, type: string): string {
  if (type === 'String') {
    if (typeof value !== 'string') throw new TypeError(`a String parameter needs a string, got ${typeof value}`)
    return sqlString(value)
  }
  if (SCALAR.test(type)) {
    const text = typeof value === 'bigint' || typeof value === 'number' ? String(value) : String(value ?? '')
    if (!/^-?\d+$/.test(text)) throw new TypeError(`an ${type} parameter needs an integer, got ${JSON.stringify(text)}`)
    return text
  }
  const array = /^Array\((.*)\)$/.exec(type)
  if (array) {
    if (!Array.isArray(value)) throw new TypeError(`an ${type} parameter needs an array`)
    return `CAST([${value.map((v) => paramLiteral(v, array[1].trim() === 'String' ? 'String' : 'text')).join(',')}] AS ${type})`
  }
  const text = value instanceof Date ? chDateTime(value) : String(value)
  return type === 'text' ? sqlString(text) : `CAST(${sqlString(text)} AS ${type})`
}

/**
 * `sql` with every `{name:Type}` placeholder outside string literals, quoted identifiers and comments replaced by
 * `params[name]` as a literal of its type. chDB runs statements with parameters one at a time across all its
 * connections (chdb-node binds them under one process-wide lock); inlined, two connections read side by side.
 */
export function inlineParams(sql: string, params: Record<string, unknown>): string {
  let out = ''
  let i = 0
  const skipQuoted = (quote: string) => {
    let j = i + 1
    while (j < sql.length && sql[j] !== quote) j += sql[j] === '\\' ? 2 : 1
    return j + 1
  }
  while (i < sql.length) {
    const c = sql[i]
    let next = i + 1
    if (c === "'" || c === '`' || c === '"') next = skipQuoted(c)
    else if (c === '-' && sql[i + 1] === '-') next = sql.indexOf('\n', i) === -1 ? sql.length : sql.indexOf('\n', i)
    else if (c === '/' && sql[i + 1] === '*') next = sql.indexOf('*/', i) === -1 ? sql.length : sql.indexOf('*/', i) + 2
    else if (c === '{') {
      const m = /^\{([A-Za-z_][A-Za-z0-9_]*):((?:[^{}']|'[^']*')+)\}/.exec(sql.slice(i, i + 300))
      if (m) {
        if (!(m[1] in params)) throw new RangeError(`no value for the query parameter ${m[1]}`)
        out += paramLiteral(params[m[1]], m[2].trim())
        i += m[0].length
        continue
      }
    }
    out += sql.slice(i, next)
    i = next
  }
  return out
}
