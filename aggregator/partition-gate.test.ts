// The partition gate: a chunk inserts only while its partition is held, in the assignment its ids were looked up in.
import { describe, expect, it } from 'vitest'
import { PartitionGate } from './partition-gate.ts'

describe('the partition gate', () => {
  it('lets a chunk in only in the assignment it was looked up in', async () => {
    const gate = new PartitionGate()
    gate.assigned([1, 3])
    const lookedUp = gate.current()
    await expect(gate.enter(3, lookedUp)).resolves.toBeUndefined()
    await expect(gate.enter(2, lookedUp)).rejects.toThrow('partition 2 was assigned to another member')

    // A rebalance: nothing passes until the next assignment, which gives partition 3 back. The chunk looked up before
    // it is refused (its partition's filter may have been loaded again without its ids); one looked up after passes.
    gate.rebalancing()
    let entered: unknown
    const waiting = gate.enter(3, lookedUp).then(() => 'entered', (err: Error) => err.message)
    void waiting.then((r) => (entered = r))
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(entered).toBeUndefined()
    gate.assigned([3])
    expect(await waiting).toBe('partition 3 was assigned again since its chunk was looked up')
    await expect(gate.enter(3, gate.current())).resolves.toBeUndefined()
  })

  it('refuses the chunks waiting for an assignment when the aggregator stops', async () => {
    const gate = new PartitionGate()
    gate.assigned([0])
    gate.rebalancing()
    const waiting = gate.enter(0, gate.current())
    gate.close()
    await expect(waiting).rejects.toThrow('the aggregator is stopping during a rebalance')
  })
})
