// Which records of a fetched batch the consumer has not handed on yet. kafkajs 2.2.4 can deliver a partition's records
// twice after a seek (the consumer's rewind): a fetch sent to the partition's old leader before the seek answers after
// a fetch to its new leader applied the seek, and passes kafkajs's stale check (which looks for a seek not yet applied).
// Two reads of the same records in the pipeline at once store them twice, or record their drops twice (the fault test
// saw both after a leader moved). So, per partition, the offset after the last record handed on in this run: records
// below it are in the pipeline already and dropped; after a seek, a batch that starts past the seek's offset is the
// stale fetch and skipped (left unresolved, so the next fetch reads from the seek), unless the same gap comes back
// (records gone to retention).

/** Stale batches with the same first offset after which the gap is taken as real. */
const GAP_STRIKES = 3

export class Deliveries {
  /** The offset after the last record handed on, per partition, in this run. */
  private readonly next = new Map<number, bigint>()
  /** Partitions sought to `next` whose first batch since has not come yet. */
  private readonly sought = new Map<number, { first?: bigint; strikes: number }>()

  /** A new assignment: positions come from the committed offsets. */
  reset(): void {
    this.next.clear()
    this.sought.clear()
  }

  /** The consumer sought `partition` back to `offset`. */
  seek(partition: number, offset: string): void {
    this.next.set(partition, BigInt(offset))
    this.sought.set(partition, { strikes: 0 })
  }

  /** A chunk up to `last` joined the pipeline. */
  handed(partition: number, last: string): void {
    this.next.set(partition, BigInt(last) + 1n)
  }

  /** The records of a batch not handed on yet; none when it is a stale fetch from before a seek. */
  fresh<M extends { offset: string }>(partition: number, messages: M[]): M[] {
    const next = this.next.get(partition)
    if (next === undefined || messages.length === 0) return messages
    const first = BigInt(messages[0].offset)
    const sought = this.sought.get(partition)
    if (sought && first > next) {
      sought.strikes = sought.first === first ? sought.strikes + 1 : 1
      sought.first = first
      if (sought.strikes < GAP_STRIKES) return []
    }
    this.sought.delete(partition)
    return first >= next ? messages : messages.filter((m) => BigInt(m.offset) >= next)
  }
}
