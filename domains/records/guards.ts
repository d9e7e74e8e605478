// How a lower domain asks the higher ones before it removes a record they may still use (a customer
// with live subscriptions, a feature an entitlement grants) without importing them: the higher domain
// registers a guard when its module loads, the lower one runs every guard in its own transaction, and
// a guard refuses by throwing the error the caller gets.
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'

// The same shape checks what a new record refers to in a higher domain (a subscription's coupons): the
// guard then takes the request instead of an id.
type Guard<A> = (db: Db, scope: Scope, subject: A) => Promise<void>

export interface Guards<A = string> {
  register(guard: Guard<A>): void
  check(db: Db, scope: Scope, subject: A): Promise<void>
}

export function guards<A = string>(): Guards<A> {
  const registered: Guard<A>[] = []
  return {
    register: (guard) => void registered.push(guard),
    async check(db, scope, subject) {
      for (const guard of registered) await guard(db, scope, subject)
    },
  }
}
