// A request answered before its body was read (413 at the size limit) still has the rest of the body coming. Closing
// the connection at once makes the kernel reset it while the client is still writing, and the client reads EPIPE or
// ECONNRESET instead of the answer (Node's fetch with a 60 MiB body did). So the rest is read and dropped first, up to
// a bound, and the answer sent after it (the lingering close of Apache and nginx).
import type { IncomingMessage } from 'node:http'

/** What is read and dropped at most before answering anyway: beyond it the client may see the connection reset. */
const LINGER = { bytes: 128 * 1024 * 1024, ms: 10_000 }

/** Reads and drops what remains of `req`'s body; resolves when it ended, the client left, or a bound was reached. */
export function discardUnread(req: IncomingMessage, bound = LINGER): Promise<void> {
  const declared = Number(req.headers['content-length'])
  if (req.complete || req.destroyed || declared > bound.bytes) return Promise.resolve()
  return new Promise((resolve) => {
    let read = 0
    const finish = () => {
      clearTimeout(timer)
      req.off('data', count).off('end', finish).off('close', finish).off('error', finish)
      req.pause()
      resolve()
    }
    const count = (chunk: Buffer) => {
      read += chunk.length
      if (read > bound.bytes) finish()
    }
    const timer = setTimeout(finish, bound.ms)
    req.on('data', count).once('end', finish).once('close', finish).once('error', finish)
    req.resume()
  })
}
