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
