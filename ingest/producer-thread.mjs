// A worker thread's entry: loads the TypeScript producer loop through tsx, whatever loader the parent thread uses.
import { tsImport } from 'tsx/esm/api'

await tsImport('./producer-thread.ts', import.meta.url)
