// A CSV export as a streamed HTTP response: a header record and rows (core/csv.ts) written as they come, in chunks,
// never the whole result in memory.
//
// - The first row is read before anything is sent: a failure there (bad input found late, an engine error) is the
//   usual error body with its status. After the first byte a failure cuts the connection without the last chunk, so
//   the client sees a broken transfer instead of a short file that looks whole.
// - Backpressure: rows are pulled only as fast as the client reads (piped into the response).
// - A client that disconnects aborts the signal handed to the row source, which stops its query (ClickHouse.streamRows
//   stops at once on the reader's side and between chunks on chDB's).
import { Readable } from 'node:stream'
import type { Context } from 'koa'
import { csvWriter, type CsvColumn, type CsvValue } from '../core/csv.ts'
import type { Deps } from '../infra/deps.ts'

export interface CsvExport {
  /** The file name a browser saves it as. */
  filename: string
  columns: readonly CsvColumn[]
  /** The rows, each its values in the columns' order; the source stops its query when `signal` aborts. */
  rows(signal: AbortSignal): AsyncIterable<readonly CsvValue[]>
}

/** Text is handed to the socket in chunks of about this many characters: one write per row would cost more than the row. */
const CHUNK = 64 * 1024

/**
 * Answers the request with `csv` as `text/csv`, streamed; resolves once the response is done (sent, cut or abandoned).
 * Counts exports by outcome (complete, aborted by the client, failed) and the rows sent.
 */
export async function sendCsv(ctx: Context, deps: Pick<Deps, 'logger' | 'metrics'>, csv: CsvExport): Promise<void> {
  const controller = new AbortController()
  let failure: unknown
  const onClose = () => {
    // Closed before the end, and not by us after a failure: the client left.
    if (!ctx.res.writableFinished && failure === undefined) controller.abort(new Error('the client closed the connection'))
  }
  ctx.res.once('close', onClose)
  const writer = csvWriter(csv.columns)
  const rows = csv.rows(controller.signal)[Symbol.asyncIterator]()
  let first: IteratorResult<readonly CsvValue[]>
  try {
    first = await rows.next()
  } catch (err) {
    ctx.res.off('close', onClose)
    // Nobody listens: no error body to send.
    if (controller.signal.aborted) return count(deps, 'aborted', 0)
    throw err
  }
  if (controller.signal.aborted) {
    await rows.return?.()
    return count(deps, 'aborted', 0)
  }
  let sent = 0
  async function* text(): AsyncGenerator<string> {
    let chunk = writer.header
    for (let next = first; !next.done; next = await rows.next()) {
      chunk += writer.row(next.value)
      sent++
      if (chunk.length >= CHUNK) {
        yield chunk
        chunk = ''
      }
    }
    if (chunk) yield chunk
  }
  ctx.status = 200
  ctx.type = 'text/csv; charset=utf-8'
  ctx.attachment(csv.filename)
  // The response is written here, not by Koa: Koa leaves a response whose body stream fails half-sent open.
  ctx.respond = false
  const source = Readable.from(text())
  await new Promise<void>((resolve) => {
    source.once('error', (err) => {
      failure = err
      ctx.res.destroy()
    })
    // Also when the client leaves: the source is then destroyed, not left waiting on a write.
    ctx.res.once('close', () => {
      source.destroy()
      resolve()
    })
    source.pipe(ctx.res)
  })
  ctx.res.off('close', onClose)
  // The source is done with (its query stopped) before the export counts as over.
  await rows.return?.()
  const outcome: Outcome = failure !== undefined && !controller.signal.aborted ? 'failed' : ctx.res.writableFinished ? 'complete' : 'aborted'
  if (outcome === 'failed') deps.logger.error({ err: failure, request_id: ctx.state.requestId }, 'csv export failed after its first byte')
  count(deps, outcome, sent)
}

type Outcome = 'complete' | 'aborted' | 'failed'

function count(deps: Pick<Deps, 'metrics'>, outcome: Outcome, rows: number): void {
  deps.metrics.csvExports.inc({ outcome })
  deps.metrics.csvExportRows.inc(rows)
}
