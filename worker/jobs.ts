// The scheduled jobs the worker role runs. Each domain adds its jobs here.
import type { Job } from './scheduler.ts'

export const jobs: Job[] = []
