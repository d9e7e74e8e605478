// The windows of a scheduled export, pure: each interval's windows are aligned to UTC (15 minutes, hours, days), so
// no window crosses a midnight and every file belongs to one day's partition. A task's windows follow each other
// from its watermark (the end of the last window planned) without gap or overlap.

export const EXPORT_INTERVALS = ['15MIN', 'hourly', 'daily'] as const
export type ExportInterval = (typeof EXPORT_INTERVALS)[number]

const INTERVAL_MS: Record<ExportInterval, number> = { '15MIN': 15 * 60_000, hourly: 3_600_000, daily: 86_400_000 }
const DAY_MS = 86_400_000

export interface Window {
  start: Date
  end: Date
}

/** The start of the interval's window holding `at`. */
export const windowStartOf = (at: Date, interval: ExportInterval): Date => new Date(Math.floor(at.getTime() / INTERVAL_MS[interval]) * INTERVAL_MS[interval])

/** The end of the window that starts at `start` (which need not be aligned: after a forced run it is the run's end). */
export const windowEndAfter = (start: Date, interval: ExportInterval): Date => new Date(windowStartOf(start, interval).getTime() + INTERVAL_MS[interval])

/**
 * The windows from `from` up to `until`, at most `max`: whole windows only, or with `partial` the last one ending at
 * `until` itself (a run forced now takes the current window so far).
 */
export function windowsFrom(from: Date, until: Date, interval: ExportInterval, options: { partial?: boolean; max: number }): Window[] {
  const out: Window[] = []
  for (let start = from; start < until && out.length < options.max; ) {
    const end = windowEndAfter(start, interval)
    if (end > until) {
      if (options.partial) out.push({ start, end: until })
      break
    }
    out.push({ start, end })
    start = end
  }
  return out
}

/** A range cut at UTC midnights: one piece per day it meets (a forced run's range, one file per day's partition). */
export function splitByDay(start: Date, end: Date): Window[] {
  const out: Window[] = []
  for (let s = start; s < end; ) {
    const e = new Date(Math.min(end.getTime(), (Math.floor(s.getTime() / DAY_MS) + 1) * DAY_MS))
    out.push({ start: s, end: e })
    s = e
  }
  return out
}

/** The day partition a window's file goes to: `date=YYYY-MM-DD` of its start (UTC). */
export const partitionOf = (w: Window): string => `date=${w.start.toISOString().slice(0, 10)}`
