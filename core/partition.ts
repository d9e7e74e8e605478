// Where a customer's events go: the Kafka key of an event and the partition of a key. Intake produces with it and the
// aggregator's dedup filter needs it (the ids of a partition are those of the customers it holds), so it is pure and here.
import { Buffer } from 'node:buffer'
import type { UsageEvent } from './events.ts'

/** An event's record key: one customer's events stay ordered in one partition. */
export const eventKey = (e: Pick<UsageEvent, 'tenantId' | 'environmentId' | 'externalCustomerId'>): string => `${e.tenantId}:${e.environmentId}:${e.externalCustomerId}`

// Room for the bytes of any key intake produces (three ids of at most 255 characters each, in UTF-8).
const keyBytes = Buffer.alloc(4096)

/**
 * The partition kafkajs' default partitioner gives a keyed message: Java's murmur2 of the key's UTF-8 bytes, made
 * positive, modulo the topic's partitions, so every producer of a key agrees. kafkajs computes it with 64-bit Long
 * objects and a key Buffer per message; 32-bit integer arithmetic (Math.imul) gives the same hash for far less.
 */
export function keyPartition(key: string, partitions: number): number {
  const bytes = Buffer.byteLength(key) <= keyBytes.length ? keyBytes : Buffer.alloc(Buffer.byteLength(key))
  const length = bytes.write(key, 0)
  const m = 0x5bd1e995
  let h = 0x9747b28c ^ length
  let i = 0
  for (const end = length & ~3; i < end; i += 4) {
    let k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)
    k = Math.imul(k, m)
    k ^= k >>> 24
    h = Math.imul(h, m) ^ Math.imul(k, m)
  }
  const tail = length & 3
  if (tail === 3) h ^= bytes[i + 2] << 16
  if (tail >= 2) h ^= bytes[i + 1] << 8
  if (tail >= 1) h = Math.imul(h ^ bytes[i], m)
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return (h & 0x7fffffff) % partitions
}

