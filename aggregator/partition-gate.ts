// Which partitions this aggregator may insert and commit for now. From the moment the group starts a rebalance until the
// next assignment, no chunk's insert or commit begins; after it, only those of partitions still held. kafkajs rejoins
// while the pipeline still holds chunks (eachBatch returned when they joined it): without this gate a member went on
// inserting a partition that had moved, after its new owner had loaded the partition's dedup filter, and their chunks
// were counted twice. The new owner's load waits for the inserts already running (aggregator/dedup-filter.ts), which
// began before this member rejoined, so before the new owner was assigned.
// A chunk also passes only in the assignment it was looked up in: one looked up before a rebalance that took its
// partition away and gave it back (a member's assignments need not be consecutive generations) could insert after the
// partition's filter was loaded again, which its ids are then missing from; so it is read again instead.

class PartitionRevokedError extends Error {}

export class PartitionGate {
  /** The partitions of the current assignment; undefined while a rebalance runs (and before the first). */
  private held: Set<number> | undefined
  /** Assignments so far: a chunk notes the one it is looked up in (current()). */
  private assignment = 0
  private closedForGood = false
  private waiting: (() => void)[] = []

  /** A rebalance began: nothing begins until the next assignment. */
  rebalancing(): void {
    this.held = undefined
  }

  assigned(partitions: number[]): void {
    this.held = new Set(partitions)
    this.assignment++
    this.release()
  }

  /** The assignment now: the one a chunk looked up now may insert and commit in. */
  current(): number {
    return this.assignment
  }

  /** Stopping: a wait for an assignment ends, refused; chunks of the partitions held still pass (a stop drains them). */
  close(): void {
    this.closedForGood = true
    this.release()
  }

  /**
   * Resolves when this member holds `partition` in the settled assignment `lookedUpIn`; rejects when it does not (it was
   * assigned to another member, or assigned again since), or is stopping.
   */
  async enter(partition: number, lookedUpIn: number): Promise<void> {
    while (!this.held && !this.closedForGood) await new Promise<void>((resolve) => this.waiting.push(resolve))
    if (!this.held) throw new PartitionRevokedError('the aggregator is stopping during a rebalance')
    if (!this.held.has(partition)) throw new PartitionRevokedError(`partition ${partition} was assigned to another member`)
    if (this.assignment !== lookedUpIn) throw new PartitionRevokedError(`partition ${partition} was assigned again since its chunk was looked up`)
  }

  private release(): void {
    for (const resolve of this.waiting.splice(0)) resolve()
  }
}
