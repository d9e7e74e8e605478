// Which partitions of the event topic this process's aggregator holds, for GET /health on the metrics listener.
// Two sources: the aggregator reports what it was handed (reportAssignment, called from aggregator/consumer.ts), and
// every consumer made through the Kafka handle follows its group's joins, rebalances and crashes (infra/kafka.ts,
// KafkaHandle.membership). The later of the two gives the partitions.
import type { KafkaHandle, Membership } from './kafka.ts'

interface Reported {
  partitions: number[]
  at: Date
}

const reported = new WeakMap<object, Reported>()

/** The aggregator of `deps` holds these partitions of the event topic from now on (empty: none, e.g. after a revocation). */
export function reportAssignment(deps: object, partitions: number[]): void {
  reported.set(deps, { partitions: [...partitions].sort((a, b) => a - b), at: new Date() })
}

export interface Assignment {
  group: string
  topic: string
  /** unknown: nothing seen yet of a consumer of this group (only reported partitions, if any). */
  state: Membership['state'] | 'unknown'
  member_id?: string
  leader?: boolean
  partitions: number[]
  /** The topic's partition count as the broker has it (absent when the broker did not answer). */
  topic_partitions?: number
  since?: string
  error?: string
}

/** What the aggregator of `deps` holds in `group`: its membership, and the partitions last joined or reported. */
export async function assignmentOf(deps: { kafka?: KafkaHandle }, group: string): Promise<Assignment | undefined> {
  const kafka = deps.kafka
  if (!kafka) return undefined
  const joined = kafka.membership(group)
  const report = reported.get(deps)
  const latest = report && (!joined || report.at >= joined.since) ? { partitions: report.partitions, since: report.at } : joined
  const topicPartitions = await kafka.partitions().catch(() => undefined)
  return {
    group,
    topic: kafka.topic,
    state: joined?.state ?? 'unknown',
    ...(joined?.member_id ? { member_id: joined.member_id, leader: joined.leader } : {}),
    partitions: latest?.partitions ?? [],
    ...(topicPartitions === undefined ? {} : { topic_partitions: topicPartitions }),
    ...(latest ? { since: latest.since.toISOString() } : {}),
    ...(joined?.error ? { error: joined.error } : {}),
  }
}
