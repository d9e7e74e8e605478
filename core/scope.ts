// Who is asking: every record query is scoped to the key's tenant and environment.
export interface Scope {
  tenantId: string
  environmentId: string
}

export type Role = 'admin' | 'read' | 'write' | 'ingest'
export const ROLES: readonly Role[] = ['admin', 'read', 'write', 'ingest']

export interface Actor extends Scope {
  keyId: string
  roles: Role[]
  /** A tenant's owner key: manages the API keys of every environment of its tenant, not only its own. */
  owner?: boolean
}
