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

  it('creates Kafka topics with 6 partitions, one replica and the broker\'s min.insync.replicas unless told otherwise', () => {
    expect(loadConfig({}).kafkaTopics).toEqual({ partitions: 6, replicationFactor: 1 })
    expect(loadConfig({ KAFKA_PARTITIONS: '24', KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '2' }).kafkaTopics).toEqual({
      partitions: 24,
      replicationFactor: 3,
      minInsyncReplicas: 2,
    })
    expect(loadConfig({ KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: ' ' }).kafkaTopics).toEqual({ partitions: 6, replicationFactor: 3 })
  })

  it('reads the ClickHouse cluster only beside a ClickHouse server', () => {
    expect(loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: ' meterbill ' }).clickhouse?.cluster).toBe('meterbill')
    expect(loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: '' }).clickhouse).not.toHaveProperty('cluster')
    expect(() => loadConfig({ CLICKHOUSE_CLUSTER: 'meterbill' })).toThrow('CLICKHOUSE_CLUSTER is set but CLICKHOUSE_URL is not')
    expect(() => loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: 'a b' })).toThrow('CLICKHOUSE_CLUSTER must be a plain identifier')
  })

  it('serves metrics on loopback port 9464 unless told otherwise, and off when METRICS_PORT is off', () => {
    expect(loadConfig({}).metrics).toEqual({ host: '127.0.0.1', port: 9464 })
    expect(loadConfig({ METRICS_HOST: '0.0.0.0', METRICS_PORT: '9100' }).metrics).toEqual({ host: '0.0.0.0', port: 9100 })
    expect(loadConfig({ METRICS_PORT: 'off' }).metrics).toBeUndefined()
    expect(() => loadConfig({ METRICS_PORT: 'ninety' })).toThrow(/METRICS_PORT/)
  })

  it('has the webhook retry job of the Limits table: on, 5 per second, 5 attempts, no exclusions, all types', () => {
    expect(loadConfig({}).webhooks).toEqual({
      timeoutMs: 10_000,
      backoffMs: 300_000,
      retry: { enabled: true, ratePerSecond: 5, maxAttempts: 5, excludedTenants: [], allowedEventTypes: [] },
    })
    const c = loadConfig({ WEBHOOK_RETRY_ENABLED: 'false', WEBHOOK_EXCLUDED_TENANTS: 'tenant_a, tenant_b', WEBHOOK_ALLOWED_EVENT_TYPES: 'invoice.update.finalized' })
    expect(c.webhooks.retry).toMatchObject({ enabled: false, excludedTenants: ['tenant_a', 'tenant_b'], allowedEventTypes: ['invoice.update.finalized'] })
  })

  it.each([
    [{ PORT: 'abc' }, 'PORT must be a whole number'],
    [{ PORT: '70000' }, 'PORT must be between 0 and 65535'],
    [{ DATABASE_URL: 'mysql://x/y' }, 'DATABASE_URL must use postgres: or postgresql:'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL is not a URL'],
    [{ CLICKHOUSE_URL: 'tcp://ch:9000' }, 'CLICKHOUSE_URL must use http: or https:'],
    [{ CLICKHOUSE_DATABASE: 'drop table' }, 'CLICKHOUSE_DATABASE must be a plain identifier'],
    [{ KAFKA_BROKERS: 'localhost' }, 'KAFKA_BROKERS entry "localhost" is not host:port'],
    [{ KAFKA_PARTITIONS: '0' }, 'KAFKA_PARTITIONS must be between 1 and 10000'],
    [{ KAFKA_PARTITIONS: 'six' }, 'KAFKA_PARTITIONS must be a whole number'],
    [{ KAFKA_REPLICATION_FACTOR: '-1' }, 'KAFKA_REPLICATION_FACTOR must be a whole number'],
    [{ KAFKA_REPLICATION_FACTOR: '0' }, 'KAFKA_REPLICATION_FACTOR must be between 1 and 100'],
    [{ KAFKA_MIN_INSYNC_REPLICAS: '0' }, 'KAFKA_MIN_INSYNC_REPLICAS must be between 1 and 100'],
    [{ KAFKA_MIN_INSYNC_REPLICAS: '2' }, 'KAFKA_MIN_INSYNC_REPLICAS must not exceed KAFKA_REPLICATION_FACTOR (1), got 2'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of'],
    [{ BOOTSTRAP_API_KEY: 'short' }, 'BOOTSTRAP_API_KEY must be at least 32 characters'],
    [{ DEDUP_WINDOW_DAYS: '7' }, 'DEDUP_WINDOW_DAYS must be between 35'],
    [{ V8_HEAP_GROWING_PERCENT: '50%' }, 'V8_HEAP_GROWING_PERCENT must be a whole number'],
    [{ WEBHOOK_RETRY_ENABLED: 'maybe' }, 'WEBHOOK_RETRY_ENABLED must be true or false'],
    [{ WEBHOOK_RATE_LIMIT: '0' }, 'WEBHOOK_RATE_LIMIT must be between 1 and 10000'],
    [{ WEBHOOK_MAX_ATTEMPTS: 'five' }, 'WEBHOOK_MAX_ATTEMPTS must be a whole number'],
    [{ WEBHOOK_EXCLUDED_TENANTS: 'tenant_a, tenant b' }, 'WEBHOOK_EXCLUDED_TENANTS entry "tenant b" is not a tenant id'],
    [{ WEBHOOK_ALLOWED_EVENT_TYPES: 'invoice.finalized' }, 'WEBHOOK_ALLOWED_EVENT_TYPES entry "invoice.finalized" is not an event type'],
    [{ TASK_IMPORT_ALLOWED_HOSTS: 'files.internal, http://10.0.0.7/' }, 'TASK_IMPORT_ALLOWED_HOSTS entry "http://10.0.0.7/" is not host or host:port'],
  ])('stops on %o naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message)
  })

  it('reads the hosts a file_url of a task may name on an internal network: none by default', () => {
    expect(loadConfig({}).taskImportAllowedHosts).toEqual([])
    expect(loadConfig({ TASK_IMPORT_ALLOWED_HOSTS: 'files.internal, 127.0.0.1:8080' }).taskImportAllowedHosts).toEqual(['files.internal', '127.0.0.1:8080'])
  })

  it('reads the model endpoint of the pricing parser, and refuses its settings without one', () => {
    expect(loadConfig({}).ai).toBeUndefined()
    expect(loadConfig({ AI_PROVIDER_URL: 'http://127.0.0.1:11434/v1' }).ai).toEqual({ url: 'http://127.0.0.1:11434/v1', key: undefined, model: 'gpt-4o-mini', timeoutMs: 20_000 })
    expect(loadConfig({ AI_PROVIDER_URL: 'https://api.example/v1', AI_PROVIDER_KEY: 'sk-1', AI_MODEL: 'llama3.1', AI_TIMEOUT_SECONDS: '5' }).ai).toEqual({ url: 'https://api.example/v1', key: 'sk-1', model: 'llama3.1', timeoutMs: 5000 })
    expect(() => loadConfig({ AI_PROVIDER_URL: 'ftp://x' })).toThrow('AI_PROVIDER_URL must use http: or https:')
    expect(() => loadConfig({ AI_PROVIDER_KEY: 'sk-1' })).toThrow('AI_PROVIDER_KEY is set but AI_PROVIDER_URL is not')
    expect(() => loadConfig({ AI_PROVIDER_URL: 'http://x', AI_MODEL: 'two words' })).toThrow('AI_MODEL must be a model name')
    expect(() => loadConfig({ AI_PROVIDER_URL: 'http://x', AI_TIMEOUT_SECONDS: '0' })).toThrow('AI_TIMEOUT_SECONDS must be between 1 and 300')
  })
})
