// The billing API's routes, one list per domain.
import type { Route } from './http/route.ts'
import { environmentRoutes } from './environments/routes.ts'
import { keyRoutes } from './keys/routes.ts'

export const apiRoutes: Route[] = [...environmentRoutes, ...keyRoutes]
