// How a lower domain asks the higher ones before it removes a record they may still use (a customer
// with live subscriptions, a feature an entitlement grants) without importing them: the higher domain
// registers a guard when its module loads, the lower one runs every guard in its own transaction, and
// a guard refuses by throwing the error the caller gets.
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'

type Guard = (db: Db, scope: Scope, id: string) => Promise<void>

export interface Guards {
  register(guard: Guard): void
  check(db: Db, scope: Scope, id: string): Promise<void>
}

export function guards(): Guards {
  const registered: Guard[] = []
  return {
    register: (guard) => void registered.push(guard),
    async check(db, scope, id) {
      for (const guard of registered) await guard(db, scope, id)
    },
  }
}
