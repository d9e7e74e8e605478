// `meterbill backfill FILE.jsonl` (docs/usage.md, "Backfill"): a file of events, one JSON object a line, sent to a running
// service's bulk intake (POST /v1/events/bulk) in batches, resumable after a crash. A checkpoint next to the file
// (FILE.jsonl.checkpoint) records how far the service has acknowledged; a rerun starts there. A batch sent but not yet
// checkpointed when the process died is sent again and stored once: every event carries an id (its own, or one derived
// from the file name, line number and line), and intake drops an id already stored within the dedup window.
import { createHash } from 'node:crypto'
import { appendFileSync, closeSync, existsSync, openSync, readFileSync, readSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { basename } from 'node:path'

/** What the checkpoint file holds: where to resume, and what was done so far. */
export interface Checkpoint {
  /** Bytes of the file acknowledged (a line boundary), and lines read up to there. */
  offset: number
  line: number
  sent: number
  rejected: number
  /** Bytes of FILE.rejected written by then: a resumed run cuts what a crashed one wrote after, and writes it again. */
  rejectedBytes: number
  /** A digest of the file's first 64 KiB and its size when started: a different file is not resumed. */
  head: string
  size: number
}

export interface BackfillProgress {
  offset: number
  size: number
  sent: number
  rejected: number
}

/** One bulk intake call: its status and JSON body. */
export type Post = (events: Record<string, unknown>[]) => Promise<{ status: number; body: { failed?: { index: number; details: unknown }[]; message?: string; details?: unknown } }>

export interface BackfillOptions {
  post: Post
  /** Events per request (bulk intake takes up to 1000). */
  batch?: number
  onProgress?: (p: BackfillProgress) => void
  /** Waits between retries of a refused (429, 503) or failed request; the last failure ends the run. */
  retryDelaysMs?: number[]
}

export class BackfillError extends Error {}

const HEAD_BYTES = 65_536
const READ_BYTES = 1 << 20

function headDigest(path: string): string {
  const fd = openSync(path, 'r')
  try {
    const buf = Buffer.alloc(HEAD_BYTES)
    const n = readSync(fd, buf, 0, HEAD_BYTES, 0)
    return createHash('sha256').update(buf.subarray(0, n)).digest('hex')
  } finally {
    closeSync(fd)
  }
}

export const checkpointPath = (path: string): string => `${path}.checkpoint`
export const rejectedPath = (path: string): string => `${path}.rejected`

/** Written to a temporary file and renamed over the checkpoint: a crash leaves the old one or the new one whole. */
function saveCheckpoint(path: string, c: Checkpoint): void {
  const tmp = `${checkpointPath(path)}.tmp`
  writeFileSync(tmp, JSON.stringify(c))
  renameSync(tmp, checkpointPath(path))
}

function loadCheckpoint(path: string, head: string, size: number): Checkpoint {
  const file = checkpointPath(path)
  if (!existsSync(file)) {
    if (existsSync(rejectedPath(path))) truncateSync(rejectedPath(path), 0)
    return { offset: 0, line: 0, sent: 0, rejected: 0, rejectedBytes: 0, head, size }
  }
  const c = JSON.parse(readFileSync(file, 'utf8')) as Checkpoint
  if (c.head !== head || size < c.offset) throw new BackfillError(`${path} is not the file ${file} was written for (it changed); delete ${file} to start over`)
  if (existsSync(rejectedPath(path))) truncateSync(rejectedPath(path), c.rejectedBytes)
  return c
}

/** Complete lines of the file from `offset`, with the byte offset after each; the last line may lack its newline. */
function* linesFrom(path: string, offset: number): Generator<{ text: string; end: number }> {
  const fd = openSync(path, 'r')
  try {
    let pos = offset
    let rest = Buffer.alloc(0)
    for (;;) {
      const buf = Buffer.alloc(READ_BYTES)
      const n = readSync(fd, buf, 0, READ_BYTES, pos)
      pos += n
      let data = Buffer.concat([rest, buf.subarray(0, n)])
      let start = 0
      let nl: number
      const base = pos - data.length
      while ((nl = data.indexOf(10, start)) !== -1) {
        yield { text: data.subarray(start, nl).toString('utf8'), end: base + nl + 1 }
        start = nl + 1
      }
      data = data.subarray(start)
      if (n === 0) {
        if (data.length > 0) yield { text: data.toString('utf8'), end: base + data.length + start }
        return
      }
      rest = data
    }
  } finally {
    closeSync(fd)
  }
}

/** The event of a line, with an id derived from the file name, line number and line when it has none. */
function eventOf(file: string, lineNo: number, text: string): Record<string, unknown> | string {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (err) {
    return `not JSON: ${(err as Error).message}`
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not a JSON object'
  const e = v as Record<string, unknown>
  if (e.event_id === undefined) e.event_id = `bf_${createHash('sha256').update(`${file}\n${lineNo}\n${text}`).digest('hex').slice(0, 32)}`
  return e
}

async function postWithRetries(o: BackfillOptions, events: Record<string, unknown>[], where: string) {
  const delays = o.retryDelaysMs ?? [500, 2000, 5000, 15000]
  for (let attempt = 0; ; attempt++) {
    let res: Awaited<ReturnType<Post>> | undefined
    let error = ''
    try {
      res = await o.post(events)
      if (res.status === 202 || res.status === 400) return res
      error = `${res.status} ${res.body.message ?? ''}`
    } catch (err) {
      error = (err as Error).message
    }
    if (attempt >= delays.length) throw new BackfillError(`${where}: ${error}; run the same command again to resume`)
    await new Promise((r) => setTimeout(r, delays[attempt]))
  }
}

/**
 * Sends the file from its checkpoint on, a batch at a time; after each acknowledged batch the checkpoint moves on.
 * Lines that are not events, and events intake refuses, are written with the reason to FILE.rejected, once: a resumed
 * run first cuts what the crashed one wrote past its checkpoint. Returns the totals, the resumed part included.
 */
export async function backfillFile(path: string, o: BackfillOptions): Promise<Checkpoint> {
  if (!existsSync(path)) throw new BackfillError(`no file ${path}`)
  const size = statSync(path).size
  const file = basename(path)
  const cp = loadCheckpoint(path, headDigest(path), size)
  const batchSize = o.batch ?? 1000
  let batch: { event: Record<string, unknown>; line: number }[] = []
  let lineNo = cp.line
  let end = cp.offset
  const reject = (line: number, reason: unknown) => {
    const text = `${JSON.stringify({ line, reason })}\n`
    appendFileSync(rejectedPath(path), text)
    cp.rejected++
    cp.rejectedBytes += Buffer.byteLength(text)
  }
  const flush = async () => {
    if (batch.length > 0) {
      const res = await postWithRetries(o, batch.map((b) => b.event), `lines ${batch[0].line}-${batch[batch.length - 1].line}`)
      // 400: no event of the batch was valid (intake names the fields of each).
      if (res.status === 400) for (const b of batch) reject(b.line, res.body.details ?? res.body.message)
      else for (const f of res.body.failed ?? []) reject(batch[f.index].line, f.details)
      cp.sent += batch.length - (res.status === 400 ? batch.length : (res.body.failed?.length ?? 0))
    }
    cp.offset = end
    cp.line = lineNo
    saveCheckpoint(path, cp)
    o.onProgress?.({ offset: cp.offset, size, sent: cp.sent, rejected: cp.rejected })
    batch = []
  }
  for (const { text, end: after } of linesFrom(path, cp.offset)) {
    lineNo++
    end = after
    if (text.trim() === '') continue
    const e = eventOf(file, lineNo, text)
    if (typeof e === 'string') reject(lineNo, e)
    else batch.push({ event: e, line: lineNo })
    if (batch.length >= batchSize) await flush()
  }
  await flush()
  return cp
}
