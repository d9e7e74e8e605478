// Configuration comes from the environment, validated once at start. A bad value stops
// start-up with a message that names the variable.
import { CREDIT_NOTE_NUMBER_TEMPLATE, formatNumber, INVOICE_NUMBER_TEMPLATE } from './billing/numbering.ts'
import { allowanceEntryProblem } from './outbound-address.ts'
import { EVENT_TYPES } from './webhook-signing.ts'

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

export interface Config {
  port: number
  host: string
  /** Prometheus metrics listener (GET /metrics); absent when METRICS_PORT is off. */
  metrics?: { host: string; port: number }
  dataDir: string
  databaseUrl?: string
  /**
   * `cluster` (CLICKHOUSE_CLUSTER): migrations create the tables ON CLUSTER, replicated, with Distributed tables for
   * reads (core/cluster-ddl.ts, docs/operations.md "ClickHouse cluster mode").
   */
  clickhouse?: { url: string; user: string; password: string; database: string; cluster?: string }
  /** Database used on the embedded chDB as on a server, so the same unqualified SQL runs on both. */
  clickhouseDatabase: string
  kafkaBrokers?: string[]
  kafkaTopic: string
  /**
   * The topics this program creates (infra/kafka.ts ensureTopics): the event topic's partitions, and every topic's
   * replication factor and min.insync.replicas (absent: the broker's default). An existing topic is never changed.
   */
  kafkaTopics: KafkaTopicSettings
  bootstrapApiKey?: string
  logLevel: LogLevel
  /** Largest request body accepted, in bytes. */
  maxBodyBytes: number
  /** Requests per second allowed per API key (token bucket; burst is twice this). */
  rateLimitPerSecond: number
  /** How far in the future an event timestamp may lie, in milliseconds. */
  maxEventFutureMs: number
  /** How long an event id is remembered for deduplication, in days. */
  dedupWindowDays: number
  /**
   * Usage batches (direct mode and the Kafka consumer): at most this many events, bytes, or this long a wait.
   * `aggregatorMaxRows`: events per insert of the Kafka consumer, which reads far more per fetch than a
   * direct-mode batch gathers; larger inserts cost ClickHouse less per event.
   */
  batch: { maxRows: number; maxBytes: number; lingerMs: number; aggregatorMaxRows: number }
  /** Direct mode: events waiting for a write beyond this are refused with 503 instead of queued. */
  maxPendingEvents: number
  /** Direct mode: bytes of the event log not yet inserted beyond which intake answers 503 (infra/event-log.ts). */
  eventLogMaxBacklogBytes: number
  /** How long after a meter's change its backfill starts: batches resolved before the change settle first. */
  backfillSettleMs: number
  /** Invoicing: drafts wait this long for late events before the billing run finalizes them; number templates. */
  invoicing: { graceMs: number; invoiceNumberTemplate: string; creditNoteNumberTemplate: string }
  /** Outbound webhooks: one request's time limit, the first retry's delay (doubling after), and the retry job's settings. */
  webhooks: { timeoutMs: number; backoffMs: number; retry: WebhookRetry }
  /**
   * V8's old generation may grow by this percent over the live heap before a full collection; 0 (the default): V8's
   * own policy, up to 4× on a large machine. Set once at start (roles.ts).
   */
  heapGrowingPercent: number
  /** 32-byte key (hex) that seals stored secrets (provider credentials, webhook signing secrets); absent: one generated into DATA_DIR. */
  secretsKey?: string
  /** An OpenAI-compatible chat API that POST /v1/ai/pricing/parse may ask; absent: the rules parser alone. */
  ai?: AiConfig
  /** SMTP_URL (smtp:// or smtps://, credentials in it): where customer email goes; absent: .eml files under DATA_DIR/mail/. */
  smtpUrl?: string
  /**
   * TASK_IMPORT_ALLOWED_HOSTS: `host` or `host:port` entries a task's file_url may name although they resolve to a
   * loopback, private or link-local address (core/outbound-address.ts); every other such address is refused.
   */
  taskImportAllowedHosts: string[]
}

interface KafkaTopicSettings {
  /** KAFKA_PARTITIONS: the event topic's partitions, so at most this many aggregators consume at once. */
  partitions: number
  /** KAFKA_REPLICATION_FACTOR: replicas of each partition, the event topic's and the dead-letter topic's. */
  replicationFactor: number
  /** KAFKA_MIN_INSYNC_REPLICAS: replicas that must have a record before acks=all answers; absent: the broker's default. */
  minInsyncReplicas?: number
}

export interface AiConfig {
  /** The API's base (…/v1) or its chat-completions address. */
  url: string
  /** Sent as a bearer token when set. */
  key?: string
  model: string
  timeoutMs: number
}

/** The stale-webhook retry job of the specification's Limits table. */
export interface WebhookRetry {
  enabled: boolean
  /** Deliveries per second within each run (token bucket). */
  ratePerSecond: number
  /** Failures after which a delivery is no longer retried. */
  maxAttempts: number
  excludedTenants: string[]
  /** Event types eligible for retry; empty allows all. */
  allowedEventTypes: string[]
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`invalid configuration: ${variable} ${reason}`)
    this.name = 'ConfigError'
  }
}

type Env = Record<string, string | undefined>

/** DEDUP_WINDOW_DAYS at least. */
const MIN_DEDUP_WINDOW_DAYS = 35

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
  const n = Number(raw)
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`)
  return n
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name]?.trim()
  if (!raw) return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(name, `is not a URL: "${raw}"`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`)
  }
  return raw
}

function identifier(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim() || fallback
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(raw)) throw new ConfigError(name, `must be a plain identifier, got "${raw}"`)
  return raw
}

function topic(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim() || fallback
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(raw)) throw new ConfigError(name, `must be a Kafka topic name, got "${raw}"`)
  return raw
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase()
  if (!raw) return fallback
  if (['true', '1', 'yes', 'on'].includes(raw)) return true
  if (['false', '0', 'no', 'off'].includes(raw)) return false
  throw new ConfigError(name, `must be true or false, got "${env[name]}"`)
}

/** A comma-separated list; every entry must pass `check`, which answers why not. */
function list(env: Env, name: string, check: (entry: string) => string | undefined): string[] {
  const entries = (env[name] ?? '').split(',').map((e) => e.trim()).filter(Boolean)
  for (const entry of entries) {
    const reason = check(entry)
    if (reason) throw new ConfigError(name, `entry "${entry}" ${reason}`)
  }
  return entries
}

function numberTemplate(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim() || fallback
  try {
    formatNumber(raw, 1, new Date(0))
  } catch (err) {
    throw new ConfigError(name, `is not a number template: ${(err as Error).message}`)
  }
  return raw
}

function hexKey(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim()
  if (!raw) return undefined
  if (!/^[0-9a-fA-F]{64}$/.test(raw)) throw new ConfigError(name, 'must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`')
  return raw.toLowerCase()
}

/** SECRETS_ENCRYPTION_KEY, or INTEGRATIONS_ENCRYPTION_KEY, its name from when it sealed provider secrets alone. */
function secretsKey(env: Env): string | undefined {
  const key = hexKey(env, 'SECRETS_ENCRYPTION_KEY')
  const former = hexKey(env, 'INTEGRATIONS_ENCRYPTION_KEY')
  if (key && former && key !== former) throw new ConfigError('SECRETS_ENCRYPTION_KEY', 'differs from INTEGRATIONS_ENCRYPTION_KEY, its former name; set only one of them')
  return key ?? former
}

/** KAFKA_PARTITIONS, KAFKA_REPLICATION_FACTOR and KAFKA_MIN_INSYNC_REPLICAS (not above the replication factor). */
function kafkaTopics(env: Env): KafkaTopicSettings {
  const partitions = int(env, 'KAFKA_PARTITIONS', 6, 1, 10_000)
  const replicationFactor = int(env, 'KAFKA_REPLICATION_FACTOR', 1, 1, 100)
  if (!env.KAFKA_MIN_INSYNC_REPLICAS?.trim()) return { partitions, replicationFactor }
  const minInsyncReplicas = int(env, 'KAFKA_MIN_INSYNC_REPLICAS', 1, 1, 100)
  // More than there are replicas: every acks=all send would fail with NOT_ENOUGH_REPLICAS.
  if (minInsyncReplicas > replicationFactor) {
    throw new ConfigError('KAFKA_MIN_INSYNC_REPLICAS', `must not exceed KAFKA_REPLICATION_FACTOR (${replicationFactor}), got ${minInsyncReplicas}`)
  }
  return { partitions, replicationFactor, minInsyncReplicas }
}

/** AI_PROVIDER_URL and its companions; a key, model or timeout without the URL is a mistake, not a default. */
function aiConfig(env: Env): AiConfig | undefined {
  const address = url(env, 'AI_PROVIDER_URL', ['http:', 'https:'])
  if (!address) {
    for (const name of ['AI_PROVIDER_KEY', 'AI_MODEL', 'AI_TIMEOUT_SECONDS']) {
      if (env[name]?.trim()) throw new ConfigError(name, 'is set but AI_PROVIDER_URL is not')
    }
    return undefined
  }
  const model = env.AI_MODEL?.trim() || 'gpt-4o-mini'
  if (/\s/.test(model) || model.length > 200) throw new ConfigError('AI_MODEL', `must be a model name without spaces, got "${env.AI_MODEL}"`)
  return { url: address, key: env.AI_PROVIDER_KEY?.trim() || undefined, model, timeoutMs: int(env, 'AI_TIMEOUT_SECONDS', 20, 1, 300) * 1000 }
}

export function loadConfig(env: Env = process.env): Config {
  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as LogLevel
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`)

  const databaseUrl = url(env, 'DATABASE_URL', ['postgres:', 'postgresql:'])
  const clickhouseUrl = url(env, 'CLICKHOUSE_URL', ['http:', 'https:'])
  const clickhouseDatabase = identifier(env, 'CLICKHOUSE_DATABASE', 'meterbill')
  const clickhouseCluster = env.CLICKHOUSE_CLUSTER?.trim() ? identifier(env, 'CLICKHOUSE_CLUSTER', '') : undefined
  // The embedded chDB is one node with no Keeper: a cluster is a server's (its remote_servers) or nothing.
  if (clickhouseCluster && !clickhouseUrl) throw new ConfigError('CLICKHOUSE_CLUSTER', 'is set but CLICKHOUSE_URL is not: cluster mode needs ClickHouse servers (the embedded chDB is one node)')

  let kafkaBrokers: string[] | undefined
  const brokers = env.KAFKA_BROKERS?.trim()
  if (brokers) {
    kafkaBrokers = brokers.split(',').map((b) => b.trim())
    for (const b of kafkaBrokers) {
      if (!/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(b)) throw new ConfigError('KAFKA_BROKERS', `entry "${b}" is not host:port`)
    }
  }

  const bootstrapApiKey = env.BOOTSTRAP_API_KEY?.trim() || undefined
  if (bootstrapApiKey !== undefined && (bootstrapApiKey.length < 32 || /\s/.test(bootstrapApiKey))) {
    throw new ConfigError('BOOTSTRAP_API_KEY', 'must be at least 32 characters without spaces')
  }

  const dataDir = env.DATA_DIR?.trim() || './data'

  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    host: env.HOST?.trim() || '0.0.0.0',
    metrics: env.METRICS_PORT?.trim().toLowerCase() === 'off' ? undefined : { host: env.METRICS_HOST?.trim() || '127.0.0.1', port: int(env, 'METRICS_PORT', 9464, 0, 65535) },
    dataDir,
    databaseUrl,
    clickhouse: clickhouseUrl
      ? {
          url: clickhouseUrl,
          user: env.CLICKHOUSE_USER ?? 'default',
          password: env.CLICKHOUSE_PASSWORD ?? '',
          database: clickhouseDatabase,
          ...(clickhouseCluster && { cluster: clickhouseCluster }),
        }
      : undefined,
    clickhouseDatabase,
    kafkaBrokers,
    kafkaTopic: topic(env, 'KAFKA_TOPIC', 'usage-events'),
    kafkaTopics: kafkaTopics(env),
    bootstrapApiKey,
    logLevel,
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    rateLimitPerSecond: int(env, 'RATE_LIMIT_PER_SECOND', 1000, 1, 1_000_000),
    maxEventFutureMs: int(env, 'EVENT_MAX_FUTURE_SECONDS', 300, 0, 31 * 86400) * 1000,
    dedupWindowDays: int(env, 'DEDUP_WINDOW_DAYS', 35, MIN_DEDUP_WINDOW_DAYS, 3650),
    heapGrowingPercent: int(env, 'V8_HEAP_GROWING_PERCENT', 0, 0, 1000),
    batch: {
      maxRows: int(env, 'BATCH_MAX_ROWS', 10_000, 1, 1_000_000),
      maxBytes: int(env, 'BATCH_MAX_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      lingerMs: int(env, 'BATCH_LINGER_MS', 20, 0, 60_000),
      aggregatorMaxRows: int(env, 'AGGREGATOR_MAX_ROWS', 50_000, 1, 1_000_000),
    },
    maxPendingEvents: int(env, 'INGEST_MAX_PENDING_EVENTS', 200_000, 1000, 100_000_000),
    eventLogMaxBacklogBytes: int(env, 'EVENT_LOG_MAX_BACKLOG_BYTES', 256 * 1024 * 1024, 1024 * 1024, 1024 * 1024 * 1024 * 1024),
    backfillSettleMs: int(env, 'METER_BACKFILL_SETTLE_SECONDS', 10, 0, 3600) * 1000,
    invoicing: {
      graceMs: int(env, 'INVOICE_GRACE_PERIOD_MINUTES', 60, 0, 30 * 1440) * 60_000,
      invoiceNumberTemplate: numberTemplate(env, 'INVOICE_NUMBER_TEMPLATE', INVOICE_NUMBER_TEMPLATE),
      creditNoteNumberTemplate: numberTemplate(env, 'CREDIT_NOTE_NUMBER_TEMPLATE', CREDIT_NOTE_NUMBER_TEMPLATE),
    },
    secretsKey: secretsKey(env),
    ai: aiConfig(env),
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    taskImportAllowedHosts: list(env, 'TASK_IMPORT_ALLOWED_HOSTS', allowanceEntryProblem),
    webhooks: {
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60) * 1000,
      backoffMs: int(env, 'WEBHOOK_RETRY_BACKOFF_SECONDS', 300, 1, 86400) * 1000,
      retry: {
        enabled: bool(env, 'WEBHOOK_RETRY_ENABLED', true),
        ratePerSecond: int(env, 'WEBHOOK_RATE_LIMIT', 5, 1, 10_000),
        maxAttempts: int(env, 'WEBHOOK_MAX_ATTEMPTS', 5, 1, 100),
        excludedTenants: list(env, 'WEBHOOK_EXCLUDED_TENANTS', (e) => (/^[A-Za-z0-9_-]+$/.test(e) ? undefined : 'is not a tenant id')),
        allowedEventTypes: list(env, 'WEBHOOK_ALLOWED_EVENT_TYPES', (e) => (EVENT_TYPES.includes(e) ? undefined : 'is not an event type')),
      },
    },
  }
}
