// Time is passed in, never read directly by the rules, so scenario tests can run on a fixed calendar.
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

export const fixedClock = (at: Date | string): Clock & { set(to: Date | string): void; advance(ms: number): void } => {
  let current = new Date(at)
  return {
    now: () => new Date(current),
    set: (to) => {
      current = new Date(to)
    },
    advance: (ms) => {
      current = new Date(current.getTime() + ms)
    },
  }
}
