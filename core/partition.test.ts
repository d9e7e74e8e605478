// The hand-written partitioner puts every key where kafkajs' default partitioner does: intake produces with it and the
// aggregator's dedup filter finds a partition's customers with it, so both must agree with any kafkajs producer.
import { Partitioners, type PartitionerArgs } from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { eventKey, keyPartition } from './partition.ts'

const long = (n: number) => 'x'.repeat(n)

describe('keyPartition', () => {
  it('puts every key in the partition kafkajs chooses', () => {
    const kafkajs = Partitioners.DefaultPartitioner()
    const keys = ['', 'a', 'ab', 'abc', 'abcd', 't_1:env_2:cust-42', 'ü', 'ключ:клиент', '😀x', long(5000)]
    for (let i = 0; i < 3000; i++) keys.push(`t${i}:e${i % 7}:${'c'.repeat(i % 13)}${String.fromCharCode(i % 3000)}`)
    for (const partitions of [1, 6, 7]) {
      const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }))
      for (const key of keys) {
        const args: PartitionerArgs = { topic: 'usage', partitionMetadata, message: { key, value: '' } }
        expect(keyPartition(key, partitions), key).toBe(kafkajs(args))
      }
    }
  })
})

describe('eventKey', () => {
  it('is tenant:environment:customer', () => {
    expect(eventKey({ tenantId: 't', environmentId: 'e', externalCustomerId: 'c:1' })).toBe('t:e:c:1')
  })
})
