// Previews that do the change for real and undo it: the work runs in a transaction that is always rolled back,
// so a preview answers exactly what execute and the billing run that follows would do, and writes nothing.

import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { inTransaction, transaction } from '../../records/service.ts'

class RolledBack extends Error {
  constructor(readonly answer: unknown) {
    super('rolled back')
  }
}

/** `work`'s answer, with everything it wrote rolled back; `inner` runs the services in its transaction. */
export async function rolledBack<T>(deps: Deps, work: (inner: Deps, tx: Tx) => Promise<T>): Promise<T> {
  try {
    await transaction(deps, async (tx) => {
      throw new RolledBack(await work(inTransaction(deps, tx), tx))
    })
  } catch (err) {
    if (err instanceof RolledBack) return err.answer as T
    throw err
  }
  throw new Error('unreachable: the transaction always rolls back')
}
