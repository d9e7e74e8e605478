// An import's file as text in pieces: the request's own (file_content), or the file at file_url, fetched once —
// http(s) only, from a public address or a host the operator allowed (public-get.ts), at most MAX_IMPORT_BYTES
// (decoded), within FETCH_TIMEOUT_MS — into DATA_DIR/tasks/<id>.input, so that a resumed import reads the very file
// its first run read.
import { createReadStream, createWriteStream } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { mkdir, rm, stat } from 'node:fs/promises'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { Deps } from '../../infra/deps.ts'
import { inputPath, taskDir } from './files.ts'
import { getPublic, RefusedUrl } from './public-get.ts'
import * as store from './store.ts'

export const MAX_IMPORT_BYTES = 100 * 1024 * 1024
const FETCH_TIMEOUT_MS = 60_000

/** A reason the task fails with, as its error_summary. */
export class TaskFailure extends Error {}


/** Refused at creation: a URL the task could never fetch. */
export function checkFileUrl(value: string): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be an absolute http(s) URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http(s) URL, not ${url.protocol.replace(/:$/, '')}`
  if (url.username || url.password) return 'must not carry credentials'
  return undefined
}

/** A file served compressed (e.g. stored so in a bucket) is read as its content. */
const DECODERS: Record<string, (() => Transform) | undefined> = { gzip: createGunzip, 'x-gzip': createGunzip, deflate: createInflate, br: createBrotliDecompress }

const mib = (bytes: number): string => `${Math.round(bytes / 1024 / 1024)} MiB`

async function download(deps: Deps, task: store.TaskRow, path: string): Promise<number> {
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS)
  let res: IncomingMessage
  try {
    res = await getPublic(new URL(task.file_url!), deps.config.taskImportAllowedHosts, signal)
  } catch (err) {
    if (err instanceof RefusedUrl) throw new TaskFailure(`file_url ${err.message}`)
    const e = err as Error & { code?: string }
    throw new TaskFailure(`file_url could not be fetched: ${signal.aborted ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s` : (e.code ?? e.message)}`)
  }
  const status = res.statusCode ?? 0
  if (status < 200 || status >= 300) {
    res.destroy()
    throw new TaskFailure(`file_url answered HTTP ${status}`)
  }
  const declared = Number(res.headers['content-length'] ?? NaN)
  if (declared > MAX_IMPORT_BYTES) {
    res.destroy()
    throw new TaskFailure(`the file at file_url is ${mib(declared)}, more than the ${mib(MAX_IMPORT_BYTES)} an import reads`)
  }
  let bytes = 0
  const bounded = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length
      if (bytes > MAX_IMPORT_BYTES) done(new TaskFailure(`the file at file_url is more than the ${mib(MAX_IMPORT_BYTES)} an import reads`))
      else done(null, chunk)
    },
  })
  await mkdir(taskDir(deps), { recursive: true })
  try {
    const decode = DECODERS[String(res.headers['content-encoding'] ?? '').toLowerCase()]
    await (decode ? pipeline(res, decode(), bounded, createWriteStream(path)) : pipeline(res, bounded, createWriteStream(path)))
  } catch (err) {
    if (err instanceof TaskFailure) throw err
    throw new TaskFailure(`file_url could not be read to its end: ${signal.aborted ? `not within ${FETCH_TIMEOUT_MS / 1000} s` : (err as Error).message}`)
  }
  return bytes
}

/** True when the copy of a previous run is there whole. */
async function kept(path: string, bytes: number | null): Promise<boolean> {
  if (bytes === null) return false
  try {
    return (await stat(path)).size === bytes
  } catch {
    return false
  }
}

/** The import file's text, in pieces, each time the answer is called (the file at file_url is fetched once, first). */
export async function importSource(deps: Deps, task: store.TaskRow): Promise<() => AsyncIterable<string>> {
  const content = task.file_content
  if (content !== null) return () => Readable.from([content])
  const path = inputPath(deps, task.id)
  if (!(await kept(path, task.file_bytes))) {
    const bytes = await download(deps, task, path)
    await store.recordFile(deps.sql, task.id, bytes, deps.clock.now())
  }
  return () => createReadStream(path, { encoding: 'utf8', highWaterMark: 256 * 1024 }) as AsyncIterable<string>
}

/** The fetched copy is no longer needed once the import ended. */
export async function dropInput(deps: Deps, id: string): Promise<void> {
  await rm(inputPath(deps, id), { force: true })
}
