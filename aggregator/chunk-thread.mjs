// A worker thread's entry: loads the TypeScript decode thread through tsx, whatever loader the parent thread uses.
import { tsImport } from 'tsx/esm/api'

await tsImport('./chunk-thread.ts', import.meta.url)
