import { pino, type Logger } from 'pino'
import type { LogLevel } from '../core/config.ts'

export type { Logger }

export const createLogger = (level: LogLevel): Logger => pino({ level, base: undefined })
