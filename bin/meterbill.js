#!/usr/bin/env node
// The package's bin: runs the TypeScript CLI through tsx, so no build step stands between a
// checkout and a running service.
import { register } from 'tsx/esm/api'

register()
await import('../cli.ts')
