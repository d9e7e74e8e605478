// A real S3 protocol server for tests (s3rver, npm): started on a free port with the buckets asked for; it checks
// SigV4 signatures against its account S3RVER / S3RVER. Objects are read back from its directory, where it keeps each
// as `<bucket>/<key>._S3rver_object`.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import S3rver from 's3rver'

export const S3_CREDENTIALS = { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' }

const SUFFIX = '._S3rver_object'

export interface S3Server {
  endpoint: string
  /** Keys of the bucket's objects, sorted. */
  keys(bucket: string): string[]
  read(bucket: string, key: string): Buffer
  stop(): Promise<void>
}

export async function startS3(buckets: string[]): Promise<S3Server> {
  const directory = mkdtempSync(join(tmpdir(), 's3rver-'))
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) })
  const { port } = await server.run()
  const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]))
  return {
    endpoint: `http://127.0.0.1:${port}`,
    keys: (bucket) =>
      walk(join(directory, bucket))
        .filter((f) => f.endsWith(SUFFIX))
        .map((f) => relative(join(directory, bucket), f).slice(0, -SUFFIX.length))
        .sort(),
    read: (bucket, key) => readFileSync(join(directory, bucket, `${key}${SUFFIX}`)),
    stop: () => server.close(),
  }
}
