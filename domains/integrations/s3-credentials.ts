// An s3 connection's bucket credentials (Flexprice's S3ConnectionMetadata: aws_access_key_id, aws_secret_access_key,
// aws_session_token), as scheduled exports read them through their port (domains/exports/connection-credentials.ts).
import { AppError, validationError } from '../../core/errors.ts'
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { findRecords } from '../../infra/records.ts'
import type { S3Credentials } from '../../infra/s3.ts'
import { unseal } from '../../infra/secrets.ts'
import * as store from './store.ts'

interface S3Secrets {
  aws_access_key_id: string
  aws_secret_access_key: string
  aws_session_token?: string
}

/** The scope's live s3 connection's credentials, unsealed now: a key rotated on the connection is the one used. */
export async function s3CredentialsOf(deps: Deps, scope: Scope, id: string): Promise<S3Credentials> {
  const [row] = await findRecords<store.ConnectionRow>(deps.sql, store.CONNECTIONS, scope, [id])
  if (!row || row.status !== 'published') throw new AppError('not_found', `connection ${id} not found`, { connection_id: `no live connection ${id} in this environment` })
  if (row.provider_type !== 's3') throw validationError('connection_id', `${id} is a ${row.provider_type} connection; a bucket export needs an s3 connection`)
  const secrets = unseal<S3Secrets>(deps.config, row.id, row.encrypted_secret_data)
  return { access_key_id: secrets.aws_access_key_id, secret_access_key: secrets.aws_secret_access_key, ...(secrets.aws_session_token && { session_token: secrets.aws_session_token }) }
}
