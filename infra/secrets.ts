// Secrets kept in Postgres (payment provider credentials, webhook signing secrets) are sealed with
// AES-256-GCM, the record id as associated data so a sealed value cannot be moved to another record. The key
// is SECRETS_ENCRYPTION_KEY (formerly INTEGRATIONS_ENCRYPTION_KEY), else one generated once into
// DATA_DIR/integrations.key (readable by the owner only; the file keeps its first name so data sealed before
// still opens). Processes that share a database but not a DATA_DIR (separate api and worker hosts) must be
// given the same key.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../core/config.ts'

const VERSION = 'v1'
const keys = new Map<string, Buffer>()

function keyOf(config: Config): Buffer {
  if (config.secretsKey) return Buffer.from(config.secretsKey, 'hex')
  const file = join(config.dataDir, 'integrations.key')
  let key = keys.get(file)
  if (key) return key
  try {
    // 'wx': the first process creates it; another one that lost the race reads it below.
    writeFileSync(file, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex')
  keys.set(file, key)
  return key
}

/** Whether a stored value is sealed (`v1:<iv>:<tag>:<ciphertext>`, base64 parts) rather than written in clear. */
export const isSealed = (stored: string): boolean => stored.startsWith(`${VERSION}:`)

/** `data` as JSON, sealed for the record `recordId`. */
export function seal(config: Config, recordId: string, data: unknown): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', keyOf(config), iv).setAAD(Buffer.from(recordId))
  const sealed = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()])
  return [VERSION, iv, cipher.getAuthTag(), sealed].map((p) => (typeof p === 'string' ? p : p.toString('base64'))).join(':')
}

export function unseal<T>(config: Config, recordId: string, stored: string): T {
  const [version, iv, tag, sealed] = stored.split(':')
  if (version !== VERSION) throw new Error(`${recordId}: unknown secret format`)
  const decipher = createDecipheriv('aes-256-gcm', keyOf(config), Buffer.from(iv, 'base64')).setAAD(Buffer.from(recordId))
  decipher.setAuthTag(Buffer.from(tag, 'base64'))
  try {
    return JSON.parse(Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()]).toString('utf8')) as T
  } catch {
    throw new Error(`${recordId}: its secrets do not decrypt with this process's SECRETS_ENCRYPTION_KEY`)
  }
}
