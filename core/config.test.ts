import { describe, expect, it } from 'vitest'
import { loadConfig } from './config.ts'

describe('configuration', () => {
  it('defaults to embedded engines and direct mode', () => {
    const c = loadConfig({})
    expect(c).toMatchObject({ port: 8080, dataDir: './data', databaseUrl: undefined, clickhouse: undefined, kafkaBrokers: undefined, logLevel: 'info' })
  })

  it('reads the engines when configured', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgres://u@db:5432/x',
      CLICKHOUSE_URL: 'http://ch:8123',
      CLICKHOUSE_USER: 'u',
      CLICKHOUSE_DATABASE: 'billing',
      KAFKA_BROKERS: 'k1:9092, k2:9092',
    })
    expect(c.databaseUrl).toBe('postgres://u@db:5432/x')
    expect(c.clickhouse).toEqual({ url: 'http://ch:8123', user: 'u', password: '', database: 'billing' })
    expect(c.kafkaBrokers).toEqual(['k1:9092', 'k2:9092'])
  })

  it.each([
    [{ PORT: 'abc' }, 'PORT must be a whole number'],
    [{ PORT: '70000' }, 'PORT must be between 0 and 65535'],
    [{ DATABASE_URL: 'mysql://x/y' }, 'DATABASE_URL must use postgres: or postgresql:'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL is not a URL'],
    [{ CLICKHOUSE_URL: 'tcp://ch:9000' }, 'CLICKHOUSE_URL must use http: or https:'],
    [{ CLICKHOUSE_DATABASE: 'drop table' }, 'CLICKHOUSE_DATABASE must be a plain identifier'],
    [{ KAFKA_BROKERS: 'localhost' }, 'KAFKA_BROKERS entry "localhost" is not host:port'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of'],
    [{ BOOTSTRAP_API_KEY: 'short' }, 'BOOTSTRAP_API_KEY must be at least 32 characters'],
    [{ DEDUP_WINDOW_DAYS: '7' }, 'DEDUP_WINDOW_DAYS must be between 35'],
  ])('stops on %o naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message)
  })
})
