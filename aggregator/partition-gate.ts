// Which partitions this aggregator may insert and commit for now. From the moment the group starts a rebalance until the
// next assignment, no chunk's insert or commit begins; after it, only those of partitions still held. kafkajs rejoins
// while the pipeline still holds chunks (eachBatch returned when they joined it): without this gate a member went on
// inserting a partition that had moved, after its new owner had loaded the partition's dedup filter, and their chunks
// were counted twice. The new owner's load waits for the inserts already running (aggregator/dedup-filter.ts), which
// began before this member rejoined, so before the new owner was assigned.

class PartitionRevokedError extends Error {}

export class PartitionGate {
  /** The partitions of the current assignment; undefined while a rebalance runs (and before the first). */
  private held: Set<number> | undefined
  private closedForGood = false
  private waiting: (() => void)[] = []

  /** A rebalance began: nothing begins until the next assignment. */
  rebalancing(): void {
    this.held = undefined
  }

  assigned(partitions: number[]): void {
    this.held = new Set(partitions)
    this.release()
  }

  /** Stopping: a wait for an assignment ends, refused; chunks of the partitions held still pass (a stop drains them). */
  close(): void {
    this.closedForGood = true
    this.release()
  }

  /** Resolves when this member holds `partition` in a settled assignment; rejects when it does not, or is stopping. */
  async enter(partition: number): Promise<void> {
    while (!this.held && !this.closedForGood) await new Promise<void>((resolve) => this.waiting.push(resolve))
    if (!this.held) throw new PartitionRevokedError('the aggregator is stopping during a rebalance')
    if (!this.held.has(partition)) throw new PartitionRevokedError(`partition ${partition} was assigned to another member`)
  }

  private release(): void {
    for (const resolve of this.waiting.splice(0)) resolve()
  }
}
