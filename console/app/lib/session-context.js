// The signed-in session, available to every component: {api, roles, canWrite, isAdmin, environmentId, environments}.
import { createContext, useContext } from './html.js'

export const Session = createContext(null)
export const useSession = () => useContext(Session)
