// The official Flexprice TypeScript SDK (@flexprice/sdk), unchanged, pointed at a test service's /v1:
// the SDK suite (test/sdk/*.test.ts) drives the service only through it, as a switching customer would.
import { Flexprice, ResponseValidationError, SDKValidationError } from '@flexprice/sdk'
import type { Harness } from '../harness.ts'

/** Errors the SDK throws name only "Response validation failed": say what the service answered and why it was refused. */
function explained(err: unknown): unknown {
  if (err instanceof ResponseValidationError) return new Error(`${err.pretty()}\nstatus ${err.statusCode}, body: ${err.body.slice(0, 2000)}`, { cause: err })
  if (err instanceof SDKValidationError) return new Error(err.pretty(), { cause: err })
  return err
}

/** Every SDK call's failure, rethrown with the response that caused it. */
function explaining<T extends object>(target: T): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver) as unknown
      if (typeof value === 'function') {
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(obj, args)
          return result instanceof Promise ? result.catch((e: unknown) => Promise.reject(explained(e))) : result
        }
      }
      return value && typeof value === 'object' && !(value instanceof Date) ? explaining(value) : value
    },
  })
}

export function sdk(h: Harness, key: string = h.key): Flexprice {
  return explaining(new Flexprice({ serverURL: `${h.baseUrl}/v1`, apiKeyAuth: key }))
}

/** The error an SDK call fails with (the call must fail). */
export async function failure(call: Promise<unknown>): Promise<any> {
  try {
    await call
  } catch (err) {
    return (err as { cause?: unknown }).cause ?? err
  }
  throw new Error('the SDK call succeeded')
}
