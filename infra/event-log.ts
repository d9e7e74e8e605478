// Direct mode's durable event log: intake appends each request's events and answers once an fsync covers them;
// an inserter (aggregator/log-inserter.ts) reads them back in large batches and records what it stored in a
// checkpoint. Segment files under DATA_DIR/event-log, one line per request: `<event count> <JSON array of wire
// events>\n`. Group commit: requests arriving while an fsync runs are written and fsync'd together by the next.
// A process always appends to a new segment, so a torn last line (a crash mid-write, never acknowledged) is
// only ever at the end of an older segment, where reading skips it.
import { closeSync, fsyncSync, openSync } from 'node:fs'
import { mkdir, open, readdir, readFile, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { serviceUnavailable } from '../core/errors.ts'
import { wireEvent, type UsageEvent } from '../core/events.ts'
import type { Deps } from './deps.ts'

/** A new segment is started once the current one reaches this: checkpointed segments are deleted whole. */
const SEGMENT_BYTES = 64 * 1024 * 1024
const NEWLINE = 0x0a

export interface LogOptions {
  /** Un-inserted bytes beyond which appends are refused (503); one request is admitted into an empty log whatever its size. */
  maxBacklogBytes: number
  segmentBytes?: number
  /** Called with the backlog's events whenever it changes (the Prometheus gauge). */
  onBacklog?: (events: number) => void
}

/**
 * Lines read back, with the log range they came from (its name is the batch's insert token): each line's JSON
 * array of wire events is bytes [starts[i], ends[i]) of `bytes`, as the aggregator's decode thread takes records.
 */
export interface LogBatch {
  segment: number
  from: number
  to: number
  bytes: Uint8Array
  starts: Uint32Array
  ends: Uint32Array
  /** Events the lines hold by their counts. */
  count: number
  token: string
}

export interface Backlog {
  events: number
  bytes: number
}

interface Waiting {
  text: string
  bytes: number
  events: number
  resolve(): void
  reject(err: unknown): void
}

interface Position {
  segment: number
  offset: number
}

const segmentName = (n: number): string => `${String(n).padStart(12, '0')}.log`

/** Each line of `buf`: where it starts, where its JSON starts, where it ends (its newline), and its event count; a line without its newline is left out. */
function* linesOf(buf: Buffer): Generator<{ start: number; json: number; end: number; count: number }> {
  let start = 0
  for (let nl = buf.indexOf(NEWLINE, start); nl >= 0; start = nl + 1, nl = buf.indexOf(NEWLINE, start)) {
    const space = buf.indexOf(0x20, start)
    const count = space > start && space < nl ? Number(buf.toString('latin1', start, space)) : 0
    yield { start, json: space + 1, end: nl, count: Number.isSafeInteger(count) && count > 0 ? count : 0 }
  }
}

export class EventLog {
  private queue: Waiting[] = []
  private flushing: Promise<void> | undefined
  private fh!: FileHandle
  private active = 0
  /** Bytes of the active segment an fsync covers. */
  private durable = 0
  /** Sizes of the finished segments, by number: what the inserter may read of them. */
  private readonly finished = new Map<number, number>()
  private cursor: Position = { segment: 0, offset: 0 }
  private backlogBytes = 0
  private backlogEvents = 0
  /** Events acknowledged (fsync'd) and events inserted since open, for readers waiting for their writes. */
  private acked = 0
  private stored = 0
  private readers: { target: number; resolve(): void }[] = []
  private failure: Error | undefined
  private closed = false
  private wake: (() => void) | undefined
  private noticed = false
  /** fsyncs done, for the group-commit test and the health report. */
  syncs = 0

  private constructor(
    readonly dir: string,
    private readonly options: LogOptions,
  ) {}

  /** Opens the log in `dir`: the backlog is what lies past the checkpoint; appends go to a new segment. */
  static async open(dir: string, options: LogOptions): Promise<EventLog> {
    const log = new EventLog(dir, options)
    await mkdir(dir, { recursive: true })
    const segments = (await readdir(dir))
      .filter((f) => /^\d{12}\.log$/.test(f))
      .map((f) => Number(f.slice(0, 12)))
      .sort((a, b) => a - b)
    const checkpoint = await log.readCheckpoint()
    log.cursor = checkpoint ?? { segment: segments[0] ?? 0, offset: 0 }
    for (const n of segments) {
      if (n < log.cursor.segment) {
        await unlink(join(dir, segmentName(n)))
        continue
      }
      const buf = await readFile(join(dir, segmentName(n)))
      let end = 0
      for (const line of linesOf(buf)) {
        end = line.end + 1
        if (n === log.cursor.segment && line.start < log.cursor.offset) continue
        log.backlogEvents += line.count
        log.backlogBytes += end - line.start
      }
      // A torn last line (never acknowledged) is not read.
      log.finished.set(n, end)
    }
    log.acked = log.backlogEvents
    log.active = Math.max(log.cursor.segment, ...segments, 0) + 1
    log.fh = await log.createSegment(log.active)
    log.reportBacklog()
    return log
  }

  backlog(): Backlog {
    return { events: this.backlogEvents, bytes: this.backlogBytes }
  }

  get maxBacklogBytes(): number {
    return this.options.maxBacklogBytes
  }

  /** Why appends fail, once a write or fsync failed: nothing more is accepted until a restart reopens the log. */
  get failed(): Error | undefined {
    return this.failure
  }

  /** Appends one request's events; resolves once they are fsync'd. Refused whole (503) when the backlog is full. */
  append(events: UsageEvent[]): Promise<void> {
    if (this.closed || this.failure) return Promise.reject(serviceUnavailable('event intake is not accepting events (the event log is closed or failed); retry with the same event ids'))
    const text = `${events.length} ${JSON.stringify(events.map(wireEvent))}\n`
    const bytes = Buffer.byteLength(text)
    if (this.backlogBytes > 0 && this.backlogBytes + bytes > this.options.maxBacklogBytes) {
      return Promise.reject(
        serviceUnavailable('event intake is saturated: events wait to be stored; nothing was accepted, retry shortly with the same event ids', {
          backlog_events: this.backlogEvents,
          backlog_bytes: this.backlogBytes,
        }),
      )
    }
    this.backlogBytes += bytes
    this.backlogEvents += events.length
    this.reportBacklog()
    const done = new Promise<void>((resolve, reject) => this.queue.push({ text, bytes, events: events.length, resolve, reject }))
    this.kick()
    return done
  }

  private kick(): void {
    this.flushing ??= this.flush().finally(() => {
      this.flushing = undefined
      // An append that came while the flush was ending saw it still running.
      if (this.queue.length > 0) this.kick()
    })
  }

  /** Writes and fsyncs everything queued, group by group, until the queue is empty. */
  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const group = this.queue
      this.queue = []
      try {
        if (this.failure) throw this.failure
        const buf = Buffer.from(group.map((w) => w.text).join(''))
        let written = 0
        while (written < buf.length) written += (await this.fh.write(buf, written, buf.length - written, this.durable + written)).bytesWritten
        await this.fh.datasync()
        this.syncs++
        this.durable += buf.length
        for (const w of group) {
          this.acked += w.events
          w.resolve()
        }
        this.notify()
        if (this.durable >= (this.options.segmentBytes ?? SEGMENT_BYTES)) await this.roll()
      } catch (err) {
        // What a failed write left in the file is unknown: refuse everything from now on (health says so).
        this.failure ??= err as Error
        for (const w of group) {
          this.backlogBytes -= w.bytes
          this.backlogEvents -= w.events
          w.reject(serviceUnavailable('the event log could not be written; nothing was accepted, retry with the same event ids'))
        }
        this.reportBacklog()
      }
    }
  }

  private async roll(): Promise<void> {
    await this.fh.close()
    this.finished.set(this.active, this.durable)
    this.active++
    this.durable = 0
    this.fh = await this.createSegment(this.active)
  }

  private async createSegment(n: number): Promise<FileHandle> {
    const fh = await open(join(this.dir, segmentName(n)), 'wx+')
    // The new file's directory entry must survive a power loss too.
    const dirFd = openSync(this.dir, 'r')
    try {
      fsyncSync(dirFd)
    } finally {
      closeSync(dirFd)
    }
    return fh
  }

  /**
   * The next durable lines after the last batch read, up to `maxEvents` events (at least one line), or
   * undefined when there are none yet. Batches are read in order; the caller inserts one, then checkpoints it.
   */
  async read(maxEvents: number): Promise<LogBatch | undefined> {
    for (;;) {
      const { segment, offset } = this.cursor
      const end = segment === this.active ? this.durable : this.finished.get(segment)
      // Past its end, or a number with no segment (a fresh log starts at 1): on to the next one.
      if (end === undefined || offset >= end) {
        if (segment === this.active) return undefined
        this.cursor = { segment: segment + 1, offset: 0 }
        continue
      }
      const fh = segment === this.active ? this.fh : await open(join(this.dir, segmentName(segment)), 'r')
      try {
        // A window for about maxEvents events at the backlog's mean line size, a quarter more, doubled while not even
        // one line fits (a line holds one request's events): a fixed generous window (2 KiB an event) allocated some
        // 100 MB a batch to use 17.
        const perEvent = this.backlogBytes / Math.max(1, this.backlogEvents)
        let want = Math.min(end - offset, Math.max(1 << 16, Math.ceil(perEvent * maxEvents * 1.25)))
        let buf: Buffer
        let got: number
        const starts: number[] = []
        const ends: number[] = []
        let used = 0
        let count = 0
        for (;;) {
          buf = Buffer.allocUnsafe(want)
          got = 0
          while (got < want) {
            const { bytesRead } = await fh.read(buf, got, want - got, offset + got)
            if (bytesRead === 0) break
            got += bytesRead
          }
          for (const line of linesOf(buf.subarray(0, got))) {
            if (used > 0 && count + line.count > maxEvents) break
            used = line.end + 1
            count += line.count
            starts.push(line.json)
            ends.push(line.end)
          }
          if (used > 0 || want >= end - offset) break
          want = Math.min(end - offset, want * 2)
        }
        if (used === 0) throw new Error(`event log ${segmentName(segment)}: no whole line in the ${want} bytes at ${offset}`)
        this.cursor = { segment, offset: offset + used }
        return {
          segment,
          from: offset,
          to: offset + used,
          bytes: buf.subarray(0, used),
          starts: Uint32Array.from(starts),
          ends: Uint32Array.from(ends),
          count,
          token: `log:${segment}:${offset}-${offset + used}`,
        }
      } finally {
        if (fh !== this.fh) await fh.close()
      }
    }
  }

  /** Records that a batch is stored: it leaves the backlog, and segments wholly before it are deleted. */
  async checkpoint(batch: LogBatch): Promise<void> {
    const to: Position = { segment: batch.segment, offset: batch.to }
    const tmp = join(this.dir, 'checkpoint.json.tmp')
    await writeFile(tmp, JSON.stringify(to))
    await rename(tmp, join(this.dir, 'checkpoint.json'))
    this.backlogBytes -= batch.to - batch.from
    this.backlogEvents -= batch.count
    this.stored += batch.count
    this.reportBacklog()
    this.readers = this.readers.filter((r) => (r.target <= this.stored ? (r.resolve(), false) : true))
    for (const n of [...this.finished.keys()]) {
      if (n >= batch.segment) continue
      this.finished.delete(n)
      await unlink(join(this.dir, segmentName(n))).catch(() => {})
    }
  }

  /** True once every event acknowledged before the call is inserted; false if that takes longer than `timeoutMs`. */
  async settled(timeoutMs: number): Promise<boolean> {
    const target = this.acked
    if (this.stored >= target) return true
    let timer: NodeJS.Timeout | undefined
    const reader = { target, resolve: () => {} }
    const done = await Promise.race([
      new Promise<boolean>((resolve) => {
        reader.resolve = () => resolve(true)
        this.readers.push(reader)
      }),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ])
    clearTimeout(timer)
    this.readers = this.readers.filter((r) => r !== reader)
    return done
  }

  /** Resolves when more may be readable (an fsync completed), the log stopped accepting, or notify() was called. */
  changed(): Promise<void> {
    // A notice given while nobody waited (the reader was between its read and this call) is not lost.
    if (this.noticed) {
      this.noticed = false
      return Promise.resolve()
    }
    return new Promise((resolve) => (this.wake = resolve))
  }

  notify(): void {
    const wake = this.wake
    this.wake = undefined
    if (wake) wake()
    else this.noticed = true
  }

  private reportBacklog(): void {
    this.options.onBacklog?.(this.backlogEvents)
  }

  private async readCheckpoint(): Promise<Position | undefined> {
    try {
      const p = JSON.parse(await readFile(join(this.dir, 'checkpoint.json'), 'utf8')) as Position
      return Number.isSafeInteger(p.segment) && Number.isSafeInteger(p.offset) ? p : undefined
    } catch {
      // None yet, or unreadable: reading from the oldest segment is safe (a stored range is dropped by its token and the id lookup).
      return undefined
    }
  }

  /** Refuses appends from now on; resolves once those in progress are fsync'd (then the inserter drains). */
  async stopAccepting(): Promise<void> {
    this.closed = true
    while (this.flushing) await this.flushing
    this.notify()
  }

  async close(): Promise<void> {
    await this.stopAccepting()
    await this.fh.close()
  }
}

const logs = new WeakMap<Deps, EventLog>()

/** Opens the log under DATA_DIR/event-log with the configured bound, reporting its backlog to the metrics and to health. */
export async function openEventLog(deps: Deps): Promise<EventLog> {
  const log = await EventLog.open(join(deps.config.dataDir, 'event-log'), {
    maxBacklogBytes: deps.config.eventLogMaxBacklogBytes,
    onBacklog: (events) => deps.metrics.eventLogBacklog.set(events),
  })
  logs.set(deps, log)
  return log
}

/** The process's event log (direct-mode intake), if it runs one. */
export const eventLogOf = (deps: Deps): EventLog | undefined => logs.get(deps)
