// Provider secrets are stored encrypted (AES-256-GCM, the connection id as associated data so a
// ciphertext cannot be moved to another connection). The key is INTEGRATIONS_ENCRYPTION_KEY, else one
// generated once into DATA_DIR/integrations.key (readable by the owner only). Processes that share a
// database but not a DATA_DIR (separate api and worker hosts) must be given the same key.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../../core/config.ts'

const keys = new Map<string, Buffer>()

function keyOf(config: Config): Buffer {
  if (config.integrationsKey) return Buffer.from(config.integrationsKey, 'hex')
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

export function encryptSecrets(config: Config, connectionId: string, data: object): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', keyOf(config), iv).setAAD(Buffer.from(connectionId))
  const sealed = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()])
  return ['v1', iv, cipher.getAuthTag(), sealed].map((p) => (typeof p === 'string' ? p : p.toString('base64'))).join(':')
}

export function decryptSecrets<T>(config: Config, connectionId: string, stored: string): T {
  const [version, iv, tag, sealed] = stored.split(':')
  if (version !== 'v1') throw new Error(`connection ${connectionId}: unknown secret format`)
  const decipher = createDecipheriv('aes-256-gcm', keyOf(config), Buffer.from(iv, 'base64')).setAAD(Buffer.from(connectionId))
  decipher.setAuthTag(Buffer.from(tag, 'base64'))
  try {
    return JSON.parse(Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()]).toString('utf8')) as T
  } catch {
    throw new Error(`connection ${connectionId}: its secrets do not decrypt with this process's INTEGRATIONS_ENCRYPTION_KEY`)
  }
}
