// Where a task's files live: under DATA_DIR/tasks, the copy of an import's file_url (<id>.input) and an export's
// file (<id>.csv or <id>.parquet).
import { join } from 'node:path'
import type { Deps } from '../../infra/deps.ts'
import type { TaskRow } from './store.ts'

export const taskDir = (deps: Deps): string => join(deps.config.dataDir, 'tasks')

export const inputPath = (deps: Deps, id: string): string => join(taskDir(deps), `${id}.input`)

const EXPORT_FILES = {
  CSV: { extension: 'csv', contentType: 'text/csv; charset=utf-8' },
  PARQUET: { extension: 'parquet', contentType: 'application/vnd.apache.parquet' },
} as const

export const exportFileOf = (task: Pick<TaskRow, 'file_type'>) => EXPORT_FILES[task.file_type as keyof typeof EXPORT_FILES]

export const exportPath = (deps: Deps, task: Pick<TaskRow, 'id' | 'file_type'>): string => join(taskDir(deps), `${task.id}.${exportFileOf(task).extension}`)
