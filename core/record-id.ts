// The identity of the intake record an event came from (UsageEvent.record, event_ids.record, event_drops.record): what
// tells a stored copy read again (the same record, after a crash or a rebalance) from a client's copy sent again (another
// record, maybe received in the same millisecond by another ingest process). One number, exact as a double: 0 is
// "unknown" (rows from before sql/clickhouse/0009 or written outside the intake path).

/** A Kafka offset's share: 2^40 records a partition, with partitions below 2^12 (at most 2^52: exact). */
const OFFSET_BITS = 2 ** 40
/** An event log byte offset's share: 64 GiB a segment (segments roll far sooner), segments below 2^16. */
const LOG_OFFSET_BITS = 2 ** 36

/**
 * A Kafka record's identity. Past the bounds identities may repeat; an event is only ever compared with the stored copy
 * of its own id received in the same millisecond, so a repeat needs both, far apart in offsets, at once.
 */
export function kafkaRecord(partition: number, offset: string | bigint): number {
  return (partition % 2 ** 12) * OFFSET_BITS + (Number(offset) % OFFSET_BITS) + 1
}

/** An event log line's identity: its segment and the byte offset where it starts. */
export function logRecord(segment: number, byteOffset: number): number {
  return (segment % 2 ** 16) * LOG_OFFSET_BITS + (byteOffset % LOG_OFFSET_BITS) + 1
}
