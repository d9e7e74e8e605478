// Writes one export file (CSV or Parquet) of one entity over a time window: the engine behind export tasks and
// scheduled exports.
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'

export type ExportEntity = 'events' | 'usage' | 'invoices' | 'credit_notes' | 'wallet_transactions' | 'analytics'
export type ExportFormat = 'csv' | 'parquet'
export interface ExportSpec {
  entity_type: ExportEntity
  format: ExportFormat
  start_time: string          // ISO; rows in [start_time, end_time)
  end_time: string
  filters?: Record<string, unknown>  // entity-specific, validated by writeExportFile (validationError naming the field)
}

/** Writes one file at `path` (creating directories), reporting rows written so far; throws a validationError for a bad spec before writing. */
export async function writeExportFile(deps: Deps, scope: Scope, spec: ExportSpec, path: string,
  onProgress?: (rowsWritten: number) => void): Promise<{ rows: number; bytes: number }> {
  void deps; void scope; void spec; void path; void onProgress
  throw new Error('writeExportFile: not implemented yet')
}
