// The row count of a Parquet file from its footer, read here rather than by ClickHouse, so that a file a ClickHouse
// server streamed to this machine is counted as one chDB wrote.
import { open, type FileHandle } from 'node:fs/promises'

/** The rows and size of a Parquet file written on this machine (a server's output included: it was streamed here). */
export async function parquetWritten(path: string, onProgress: (rows: number) => void): Promise<{ rows: number; bytes: number }> {
  const handle = await open(path, 'r')
  let rows: number
  let bytes: number
  try {
    bytes = (await handle.stat()).size
    rows = await parquetRows(handle, bytes)
  } finally {
    await handle.close()
  }
  onProgress(rows)
  return { rows, bytes }
}

/**
 * A Parquet file's row count, from its footer (FileMetaData, Thrift compact protocol: field 3, num_rows, an i64):
 * read here rather than by ClickHouse, so that a server's output streamed to this machine is counted as chDB's is.
 */
async function parquetRows(handle: FileHandle, size: number): Promise<number> {
  const tail = Buffer.alloc(8)
  await handle.read(tail, 0, 8, size - 8)
  if (tail.toString('latin1', 4) !== 'PAR1') throw new Error('export: ClickHouse wrote no Parquet footer')
  const length = tail.readUInt32LE(0)
  const meta = Buffer.alloc(length)
  await handle.read(meta, 0, length, size - 8 - length)
  return readNumRows(meta)
}

/** Walks the compact-protocol struct to field 3 (num_rows); fields 1 (version, i32) and 2 (schema, list) come first. */
function readNumRows(b: Buffer): number {
  let at = 0
  const varint = (): bigint => {
    let out = 0n
    let shift = 0n
    for (;;) {
      const byte = b[at++]
      out |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return out
      shift += 7n
    }
  }
  const zigzag = (v: bigint) => (v >> 1n) ^ -(v & 1n)
  const skip = (type: number): void => {
    switch (type) {
      case 1: case 2: return // booleans in the type nibble
      case 3: at++; return
      case 4: case 5: case 6: varint(); return
      case 7: at += 8; return
      case 8: { const n = Number(varint()); at += n; return }
      case 9: case 10: {
        const head = b[at++]
        let n = head >> 4
        if (n === 15) n = Number(varint())
        for (let i = 0; i < n; i++) skip(head & 0x0f)
        return
      }
      case 12: skipStruct(); return
      default: throw new Error(`export: unexpected Thrift type ${type} in the Parquet footer`)
    }
  }
  const skipStruct = (): void => {
    for (;;) {
      const head = b[at++]
      if (head === 0) return
      if ((head >> 4) === 0) varint()
      skip(head & 0x0f)
    }
  }
  let field = 0
  for (;;) {
    const head = b[at++]
    if (head === 0) throw new Error('export: the Parquet footer has no num_rows')
    field = head >> 4 === 0 ? Number(zigzag(varint())) : field + (head >> 4)
    if (field === 3) return Number(zigzag(varint()))
    skip(head & 0x0f)
  }
}

