// The four roles a key holds, answered as Flexprice's RBAC roles (GET /v1/rbac/roles): fixed, not made or
// changed over the API. Their permissions are written as Flexprice's are ({resource: [actions]}); they are
// the four of Flexprice's predefined roles that do what ours do (super_admin, all_writer, all_reader,
// event_ingestor).
import { notFound } from '../../../core/errors.ts'
import { ROLES, type Role } from '../../../core/scope.ts'

export interface RoleView {
  id: Role
  name: string
  description: string
  permissions: Record<string, string[]>
}

const DEFINITIONS: Record<Role, Omit<RoleView, 'id'>> = {
  admin: { name: 'Admin', description: 'Everything, including API keys, environments, webhook endpoints and the tenant', permissions: { '*': ['*'] } },
  write: { name: 'Write', description: 'Read and change every billing record; not keys, environments or webhook endpoints', permissions: { '*': ['read', 'write'] } },
  read: { name: 'Read', description: 'Read every billing record', permissions: { '*': ['read'] } },
  ingest: { name: 'Ingest', description: 'Send usage events only: the key to embed in an application', permissions: { event: ['write'] } },
}

export const listRoles = (): { roles: RoleView[] } => ({ roles: ROLES.map((id) => ({ id, ...DEFINITIONS[id] })) })

export function getRole(id: string): { role: RoleView } {
  if (!(ROLES as readonly string[]).includes(id)) throw notFound('role', id)
  return { role: { id: id as Role, ...DEFINITIONS[id as Role] } }
}
