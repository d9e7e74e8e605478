// Identifiers are prefixed and time-sortable: a UUIDv7 (millisecond time first) without dashes.
import { v7 as uuidv7 } from 'uuid'
import { randomBytes } from 'node:crypto'

export const newId = (prefix: string): string => `${prefix}_${uuidv7().replace(/-/g, '')}`

/** A secret with 256 bits of randomness, URL-safe. */
export const newSecret = (prefix: string): string => `${prefix}_${randomBytes(32).toString('base64url')}`
