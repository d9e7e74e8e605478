// Reads SDKs make on their own hot path come from the read cache (infra/read-cache.ts), which hands out the same
// object until a reload or a write of this process replaces it: so the object's identity is its freshness, and
// its JSON body is built once per object rather than per request (toWire, JSON.stringify and the write were ~40%
// of the server's CPU for a customer's every-feature entitlements). Bytes and content type are what Koa sends
// for the object itself. A query variant (feature_ids) is a cache entry, so an object, of its own. The body is kept
// encoded: a string would be measured and encoded to UTF-8 again on every write.
import type { Context } from 'koa'
import { toWire } from '../domains/records/wire.ts'

const bodies = new WeakMap<object, Buffer>()

/** Answers `value` as JSON (toWire'd), from the body built for this same object before if there is one. */
export function answerPrebuilt(ctx: Context, value: object): undefined {
  let body = bodies.get(value)
  if (body === undefined) bodies.set(value, (body = Buffer.from(JSON.stringify(toWire(value)))))
  ctx.type = 'application/json'
  ctx.body = body
  return undefined
}
