import type { Deps } from '../../infra/deps.ts'
import type { Progress } from '../../infra/scheduler.ts'

export async function runDunning(_deps: Deps, _progress: Progress = () => {}): Promise<Record<string, number>> {
  return {}
}
