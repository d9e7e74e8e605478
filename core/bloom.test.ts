// The blocked Bloom filter the dedup filter keeps per partition: it never forgets an id, its false positive rate at the
// load it is sized for is what the Poisson model of its blocks says (~0.5% at 12 bits an id), and it costs at most two
// bytes an id from a build (1.25 × the ids) to its next (full).
import { describe, expect, it } from 'vitest'
import { BlockedBloom, falsePositiveRate } from './bloom.ts'

/** A deterministic stream of 32-bit words (xorshift32), so a failure repeats. */
function words(seed: number): () => number {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    return (x >>>= 0)
  }
}

describe('BlockedBloom', () => {
  const n = 200_000
  const next = words(42)
  const ids = new Uint32Array(n * 2).map(() => next())
  const filter = BlockedBloom.sized(n)
  filter.addAll(ids)

  it('holds every id it was given', () => {
    expect(filter.hits(ids)).toHaveLength(n)
    expect(filter.added).toBe(n)
  })

  it('says maybe for new ids at the rate its blocks predict: about 0.5% at its capacity', () => {
    const probes = 400_000
    const other = words(7)
    const fresh = new Uint32Array(probes * 2).map(() => other())
    const rate = filter.hits(fresh).length / probes
    const expected = falsePositiveRate(filter.words.length / 8, n)
    expect(expected).toBeGreaterThan(0.004)
    expect(expected).toBeLessThan(0.007)
    // Binomial: 400,000 probes at ~0.5% have a standard deviation of ~0.011 points.
    expect(Math.abs(rate - expected)).toBeLessThan(0.0008)
  })

  it('costs 1.5 bytes an id at capacity, 1.875 right after a build with room to grow by a quarter', () => {
    const exact = BlockedBloom.sized(1_000_000)
    expect(exact.bytes / exact.capacity).toBeCloseTo(1.5, 2)
    const built = BlockedBloom.sized(1_250_000)
    expect(built.bytes / 1_000_000).toBeCloseTo(1.875, 2)
  })

  it('keeps its words and count through a snapshot', () => {
    const copy = new BlockedBloom(new Uint32Array(filter.words), filter.added)
    expect(copy.hits(ids)).toHaveLength(n)
    expect(copy.capacity).toBe(filter.capacity)
    expect(() => new BlockedBloom(new Uint32Array(7))).toThrow('multiple of 8 words')
  })
})
