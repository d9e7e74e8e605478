// The aggregator's decode thread (see startChunkThread): holds a ChunkStore and answers each {id, method, args}
// with {id, value} or {id, error}; the bytes of an answer (a chunk's insert text) are moved, not copied.
import { parentPort } from 'node:worker_threads'
import { ChunkStore, transferables } from './chunks.ts'

const port = parentPort!
const store = new ChunkStore()
port.on('message', ({ id, method, args }: { id: number; method: keyof ChunkStore; args: unknown[] }) => {
  let value: unknown
  try {
    value = (store[method] as (...a: unknown[]) => unknown).apply(store, args)
  } catch (err) {
    port.postMessage({ id, error: err instanceof Error ? err.message : String(err) })
    return
  }
  port.postMessage({ id, value }, transferables([value]))
})
