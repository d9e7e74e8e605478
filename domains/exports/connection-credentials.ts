// The port through which a scheduled task reads the bucket credentials of the connection it names (connection_id):
// connections live in domains/integrations, a sibling exports may not import. The program plugs the integrations
// implementation in (roles.ts); with nothing plugged, a task naming a connection is neither made nor run.
import { serviceUnavailable } from '../../core/errors.ts'
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import type { S3Credentials } from '../../infra/s3.ts'

/**
 * The credentials of the scope's live s3 connection `id`, read now (so a rotated key is used from the next run on).
 * Throws not_found naming connection_id when there is none, validation_error when it is not an s3 connection.
 */
export type ConnectionCredentials = (deps: Deps, scope: Scope, id: string) => Promise<S3Credentials>

let plugged: ConnectionCredentials | undefined

export function plugConnectionCredentials(read: ConnectionCredentials): void {
  plugged = read
}

export function connectionCredentials(): ConnectionCredentials {
  if (!plugged) throw serviceUnavailable('connection credentials are not available in this process')
  return plugged
}
