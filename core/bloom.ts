// A split-block Bloom filter (Putze et al.; the layout of Parquet's and Impala's): 256-bit blocks of eight 32-bit
// words, one bit set in each word, the block chosen by the high half of a 64-bit hash and the bits by the low half.
// A probe or an add touches one block (one cache line), so its cost does not grow with the number of ids held.
// It never forgets an id it was given (no false negatives); it says "maybe" for a share of ids it never saw
// (falsePositiveRate): the dedup filter checks those exactly, and trusts its misses.

/** Parquet's salts: word i of a block gets bit (lo × SALT[i]) >>> 27 (setBits has them as constants, in this order). */
const SALT = new Uint32Array([0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31])
const WORDS = 8
const TWO_32 = 4294967296

/** Bits of filter per id it is sized for: 1.5 bytes (at that load, ~0.6% false positives; measured in bloom.test.ts). */
const BITS_PER_ID = 12

/**
 * Sets a hash's bit in each word of the block at `at`, unrolled with the salts as constants: in a large filter the add is
 * a cache miss, and the loop and array loads around it counted (~420 against ~150 ns an id into a 180 MB filter).
 */
function setBits(w: Uint32Array, at: number, lo: number): void {
  w[at] |= 1 << (Math.imul(lo, 0x47b6137b) >>> 27)
  w[at + 1] |= 1 << (Math.imul(lo, 0x44974d91) >>> 27)
  w[at + 2] |= 1 << (Math.imul(lo, 0x8824ad5b) >>> 27)
  w[at + 3] |= 1 << (Math.imul(lo, 0xa2b7289d) >>> 27)
  w[at + 4] |= 1 << (Math.imul(lo, 0x705495c7) >>> 27)
  w[at + 5] |= 1 << (Math.imul(lo, 0x2df1424b) >>> 27)
  w[at + 6] |= 1 << (Math.imul(lo, 0x9efc4947) >>> 27)
  w[at + 7] |= 1 << (Math.imul(lo, 0x5c6bfb31) >>> 27)
}

export class BlockedBloom {
  readonly words: Uint32Array
  private readonly blocks: number
  /** Ids added (repeats included): the load the false positive rate follows. */
  added = 0

  constructor(words: Uint32Array, added = 0) {
    if (words.length === 0 || words.length % WORDS !== 0) throw new Error(`a blocked Bloom filter has a multiple of ${WORDS} words, not ${words.length}`)
    this.words = words
    this.blocks = words.length / WORDS
    this.added = added
  }

  /** An empty filter for `capacity` ids at BITS_PER_ID bits each (at least one block). */
  static sized(capacity: number): BlockedBloom {
    const blocks = Math.max(1, Math.ceil((Math.max(capacity, 1) * BITS_PER_ID) / (WORDS * 32)))
    return new BlockedBloom(new Uint32Array(blocks * WORDS))
  }

  /** The ids it was sized for: past them the false positive rate climbs. */
  get capacity(): number {
    return Math.floor((this.blocks * WORDS * 32) / BITS_PER_ID)
  }

  get bytes(): number {
    return this.words.byteLength
  }

  /** The first word of the block of a hash whose high 32 bits are `hi` (uniform over the blocks, no modulo bias). */
  private block(hi: number): number {
    return Math.floor((hi >>> 0) * (this.blocks / TWO_32)) * WORDS
  }

  add(hi: number, lo: number): void {
    setBits(this.words, Math.floor((hi >>> 0) * (this.blocks / TWO_32)) * WORDS, lo)
    this.added++
  }

  mayHave(hi: number, lo: number): boolean {
    const at = this.block(hi)
    const w = this.words
    for (let i = 0; i < WORDS; i++) {
      const bit = 1 << (Math.imul(lo, SALT[i]) >>> 27)
      if ((w[at + i] & bit) === 0) return false
    }
    return true
  }

  /** Adds every hash of `hashes` (pairs hi, lo), `count` of them counted as added (all by default; a rebuild adds again hashes its read mostly held). */
  addAll(hashes: Uint32Array, count = hashes.length >> 1): void {
    const w = this.words
    const scale = this.blocks / TWO_32
    for (let i = 0; i < hashes.length; i += 2) setBits(w, Math.floor(hashes[i] * scale) * WORDS, hashes[i + 1])
    this.added += count
  }

  /** The indexes (of pairs) in `hashes` the filter may hold. */
  hits(hashes: Uint32Array): number[] {
    const out: number[] = []
    for (let i = 0; i < hashes.length; i += 2) if (this.mayHave(hashes[i], hashes[i + 1])) out.push(i >> 1)
    return out
  }
}

/**
 * The expected false positive rate of a split-block filter of `blocks` blocks holding `ids` ids: the ids of a block are
 * Poisson distributed, and a block of j ids answers "maybe" for a new id with probability (1 - (1 - 1/32)^j)^8.
 */
export function falsePositiveRate(blocks: number, ids: number): number {
  const lambda = ids / blocks
  let p = Math.exp(-lambda)
  let rate = 0
  for (let j = 0; j < lambda * 4 + 50; j++) {
    if (j > 0) p *= lambda / j
    rate += p * (1 - (1 - 1 / 32) ** j) ** WORDS
  }
  return rate
}
