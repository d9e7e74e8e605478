// s3rver ships no types: the little of it test/s3-server.ts uses.
declare module 's3rver' {
  export default class S3rver {
    constructor(options: Record<string, unknown>)
    run(): Promise<{ port: number }>
    close(): Promise<void>
  }
}
