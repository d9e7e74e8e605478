// A CSV export as a streamed HTTP response: a header record, then the source's pieces of CSV (rows written through
// core/csv.ts, or text ClickHouse wrote, passed through) as they come, never the whole result in memory.
//
// - The first piece is read before anything is sent: a failure there (bad input found late, an engine error) is the
//   usual error body with its status. After the first byte a failure cuts the connection without the last chunk, so
//   the client sees a broken transfer instead of a short file that looks whole.
// - Backpressure: pieces are pulled only as fast as the client reads (piped into the response, one piece ahead).
// - A client that disconnects aborts the signal handed to the source, which stops its query (ClickHouse.streamRows
//   and streamCsv stop at once on the reader's side and between chunks on chDB's).
import { Readable } from 'node:stream'
import type { Context } from 'koa'
import { csvHeader, type CsvColumn, type CsvPiece } from '../core/csv.ts'
import type { Deps } from '../infra/deps.ts'

export interface CsvExport {
  /** The file name a browser saves it as. */
  filename: string
  columns: readonly CsvColumn[]
  /**
   * The records after the header, already CSV: rows written through core/csv.ts (csvPieces) or ClickHouse's own text
   * passed through. The source stops its query when `signal` aborts.
   */
  pieces(signal: AbortSignal): AsyncIterable<CsvPiece>
}

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
  const pieces = csv.pieces(controller.signal)[Symbol.asyncIterator]()
  let first: IteratorResult<CsvPiece>
  try {
    first = await pieces.next()
  } catch (err) {
    ctx.res.off('close', onClose)
    // Nobody listens: no error body to send.
    if (controller.signal.aborted) return count(deps, 'aborted', 0)
    throw err
  }
  if (controller.signal.aborted) {
    await pieces.return?.()
    return count(deps, 'aborted', 0)
  }
  let sent = 0
  async function* text(): AsyncGenerator<Uint8Array | string> {
    yield csvHeader(csv.columns)
    for (let next = first; !next.done; next = await pieces.next()) {
      sent += next.value.rows
      yield next.value.bytes
    }
  }
  ctx.status = 200
  ctx.type = 'text/csv; charset=utf-8'
  ctx.attachment(csv.filename)
  // The response is written here, not by Koa: Koa leaves a response whose body stream fails half-sent open.
  ctx.respond = false
  // One piece ahead at most: a slow client holds the source back, not a queue of pieces in memory.
  const source = Readable.from(text(), { highWaterMark: 1 })
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
  await pieces.return?.()
  const outcome: Outcome = failure !== undefined && !controller.signal.aborted ? 'failed' : ctx.res.writableFinished ? 'complete' : 'aborted'
  if (outcome === 'failed') deps.logger.error({ err: failure, request_id: ctx.state.requestId }, 'csv export failed after its first byte')
  count(deps, outcome, sent)
}

type Outcome = 'complete' | 'aborted' | 'failed'

function count(deps: Pick<Deps, 'metrics'>, outcome: Outcome, rows: number): void {
  deps.metrics.csvExports.inc({ outcome })
  deps.metrics.csvExportRows.inc(rows)
}
