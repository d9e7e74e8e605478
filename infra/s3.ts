// Uploads a file to an S3-compatible bucket (AWS S3, MinIO, R2, s3rver) with one PUT signed by AWS Signature Version
// 4, with no SDK: the body streams from the file (hashed first in a pass of its own, as the signature covers it), so
// memory stays flat whatever the size. One PUT takes up to 5 GiB, S3's limit; a larger file is refused.
import { createHash, createHmac } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { pipeline } from 'node:stream/promises'

export interface S3Target {
  bucket: string
  region: string
  /** e.g. http://127.0.0.1:4569 (MinIO, s3rver); absent: AWS's endpoint of the region. */
  endpointUrl?: string
  /** Bucket in the path rather than the host name (MinIO and most local servers need it). */
  usePathStyle?: boolean
  /** Server-side encryption asked of the bucket (x-amz-server-side-encryption). */
  encryption?: string
}

export interface S3Credentials {
  access_key_id: string
  secret_access_key: string
  session_token?: string
}

const MAX_PUT_BYTES = 5 * 1024 ** 3

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex')
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest()
/** RFC 3986 encoding as SigV4 wants it, `/` kept between a key's segments. */
const encodeKey = (key: string) => key.split('/').map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/')

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256')
  await pipeline(createReadStream(path), hash)
  return hash.digest('hex')
}

/** The object's URL: path style `endpoint/bucket/key`, else virtual-hosted `bucket.host/key`. */
function urlOf(t: S3Target, key: string): URL {
  const endpoint = new URL(t.endpointUrl ?? `https://s3.${t.region}.amazonaws.com`)
  const base = endpoint.pathname.replace(/\/$/, '')
  if (t.usePathStyle) return new URL(`${endpoint.protocol}//${endpoint.host}${base}/${t.bucket}/${encodeKey(key)}`)
  return new URL(`${endpoint.protocol}//${t.bucket}.${endpoint.host}${base}/${encodeKey(key)}`)
}

/** PUTs the file at `path` as `key`; resolves when the bucket answered 2xx, rejects with its error text otherwise. */
export async function putObject(t: S3Target, credentials: S3Credentials, key: string, path: string, contentType: string, now: Date): Promise<void> {
  const { size } = await stat(path)
  if (size > MAX_PUT_BYTES) throw new Error(`s3: ${size} bytes is over the 5 GiB a single PUT takes`)
  const url = urlOf(t, key)
  const payloadHash = await fileSha256(path)
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const day = amzDate.slice(0, 8)
  const headers: Record<string, string> = {
    host: url.host,
    'content-length': String(size),
    'content-type': contentType,
    'x-amz-content-sha256': payloadHash,
    'x-amz-date': amzDate,
    ...(t.encryption ? { 'x-amz-server-side-encryption': t.encryption } : {}),
    ...(credentials.session_token ? { 'x-amz-security-token': credentials.session_token } : {}),
  }
  const names = Object.keys(headers).sort()
  const canonical = ['PUT', url.pathname, '', ...names.map((n) => `${n}:${headers[n].trim()}`), '', names.join(';'), payloadHash].join('\n')
  const credentialScope = `${day}/${t.region}/s3/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', amzDate, credentialScope, sha256(canonical)].join('\n')
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${credentials.secret_access_key}`, day), t.region), 's3'), 'aws4_request')
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${credentials.access_key_id}/${credentialScope}, SignedHeaders=${names.join(';')}, Signature=${hmac(signingKey, toSign).toString('hex')}`

  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  await new Promise<void>((resolve, reject) => {
    const req = send(url, { method: 'PUT', headers, timeout: 120_000 }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk.length < 4000 ? chunk : ''))
      res.on('end', () => {
        if ((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300) resolve()
        else reject(new Error(`s3: PUT ${url.host}${url.pathname} answered ${res.statusCode}: ${s3ErrorOf(text)}`))
      })
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('s3: no answer within 120 s')))
    req.on('error', reject)
    pipeline(createReadStream(path), req).catch(reject)
  })
}

/** S3's XML error reduced to its code and message. */
const s3ErrorOf = (xml: string): string => {
  const code = /<Code>([^<]*)<\/Code>/.exec(xml)?.[1]
  const message = /<Message>([^<]*)<\/Message>/.exec(xml)?.[1]
  return code ? `${code}${message ? `: ${message}` : ''}` : xml.slice(0, 200)
}
