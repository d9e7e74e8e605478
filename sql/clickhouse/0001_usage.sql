-- The usage pipeline's tables. One INSERT per batch goes into event_batches (a Null table); its
-- materialized views fan the batch out to events, event_ids, meter_usage and event_drops in the same
-- statement, so a batch is stored whole or not at all, and a retried batch (same
-- insert_deduplication_token) is dropped by every target table (non_replicated_deduplication_window).

-- Raw events, ordered for usage queries: one customer's events of one name are contiguous in time.
CREATE TABLE IF NOT EXISTS events (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  external_customer_id String,
  event_name           LowCardinality(String),
  timestamp            DateTime64(3, 'UTC'),
  id                   String,
  customer_id          String,
  source               LowCardinality(String),
  properties           String,
  received_at          DateTime64(3, 'UTC'),
  -- Server time of the insert: the meter backfill uses it to know which batches have settled.
  inserted_at          DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = MergeTree
ORDER BY (tenant_id, environment_id, external_customer_id, event_name, timestamp, id)
SETTINGS non_replicated_deduplication_window = 1000;

-- Dedup keys: one row per stored (tenant, environment, event id), kept for the dedup window whatever the
-- event's timestamp. Also answers GET /v1/events/lookup without scanning events.
CREATE TABLE IF NOT EXISTS event_ids (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  event_id             String,
  external_customer_id String,
  event_name           LowCardinality(String),
  timestamp            DateTime64(3, 'UTC'),
  received_at          DateTime64(3, 'UTC'),
  expires_at           DateTime('UTC')
) ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, environment_id, event_id)
TTL expires_at
SETTINGS non_replicated_deduplication_window = 1000;

-- One row per stored event and matching meter (revision: the meter's filters version), with its exact value.
CREATE TABLE IF NOT EXISTS meter_usage (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  meter_id             String,
  revision             UInt32,
  external_customer_id String,
  timestamp            DateTime64(3, 'UTC'),
  event_id             String,
  value                Decimal(38, 12),
  group_value          String,
  unique_value         String
) ENGINE = MergeTree
ORDER BY (tenant_id, environment_id, meter_id, revision, external_customer_id, timestamp)
SETTINGS non_replicated_deduplication_window = 1000;

-- Events not stored: duplicates of a stored id and rejected records, with the reason; for the lookup.
CREATE TABLE IF NOT EXISTS event_drops (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  event_id             String,
  kind                 LowCardinality(String),
  reason               String,
  timestamp            DateTime64(3, 'UTC'),
  received_at          DateTime64(3, 'UTC'),
  expires_at           DateTime('UTC')
) ENGINE = MergeTree
ORDER BY (tenant_id, environment_id, event_id)
TTL expires_at
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS event_batches (
  kind                 LowCardinality(String),
  tenant_id            String,
  environment_id       String,
  id                   String,
  external_customer_id String,
  customer_id          String,
  event_name           String,
  source               String,
  timestamp            DateTime64(3, 'UTC'),
  received_at          DateTime64(3, 'UTC'),
  properties           String,
  reason               String,
  expires_at           DateTime('UTC'),
  meter_ids            Array(String),
  revisions            Array(UInt32),
  meter_values         Array(Decimal(38, 12)),
  group_values         Array(String),
  unique_values        Array(String)
) ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_from_batches TO meter_usage AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, timestamp, id AS event_id,
       value, group_value, unique_value
FROM event_batches
ARRAY JOIN meter_ids AS meter_id, revisions AS revision, meter_values AS value, group_values AS group_value,
           unique_values AS unique_value
WHERE kind = 'stored';

CREATE MATERIALIZED VIEW IF NOT EXISTS events_from_batches TO events AS
SELECT tenant_id, environment_id, external_customer_id, event_name, timestamp, id, customer_id, source, properties,
       received_at, now64(3) AS inserted_at
FROM event_batches
WHERE kind = 'stored';

CREATE MATERIALIZED VIEW IF NOT EXISTS event_ids_from_batches TO event_ids AS
SELECT tenant_id, environment_id, id AS event_id, external_customer_id, event_name, timestamp, received_at, expires_at
FROM event_batches
WHERE kind = 'stored';

CREATE MATERIALIZED VIEW IF NOT EXISTS event_drops_from_batches TO event_drops AS
SELECT tenant_id, environment_id, id AS event_id, kind, reason, timestamp, received_at, expires_at
FROM event_batches
WHERE kind != 'stored';

-- Per-minute mergeable states of meter_usage: window queries read these, not raw rows.
CREATE TABLE IF NOT EXISTS meter_usage_1m (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  meter_id             String,
  revision             UInt32,
  external_customer_id String,
  group_value          String,
  minute               DateTime64(3, 'UTC'),
  events               SimpleAggregateFunction(sum, UInt64),
  value_sum            SimpleAggregateFunction(sum, Decimal(38, 12)),
  value_min            SimpleAggregateFunction(min, Decimal(38, 12)),
  value_max            SimpleAggregateFunction(max, Decimal(38, 12)),
  -- Σ value × milliseconds past the minute: with value_sum it gives Σ value × time for WEIGHTED_SUM.
  value_ms_sum         SimpleAggregateFunction(sum, Decimal(76, 12)),
  uniques              AggregateFunction(uniqExact, String),
  latest               AggregateFunction(argMax, Decimal(38, 12), Tuple(DateTime64(3, 'UTC'), String))
) ENGINE = AggregatingMergeTree
ORDER BY (tenant_id, environment_id, meter_id, revision, external_customer_id, group_value, minute)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_1m_from_usage TO meter_usage_1m AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, group_value,
       toDateTime64(toStartOfMinute(timestamp), 3, 'UTC') AS minute,
       toUInt64(count()) AS events,
       sum(value) AS value_sum,
       min(value) AS value_min,
       max(value) AS value_max,
       sum(toDecimal256(value, 12) * (toUnixTimestamp64Milli(timestamp) % 60000)) AS value_ms_sum,
       uniqExactState(unique_value) AS uniques,
       argMaxState(value, (timestamp, event_id)) AS latest
FROM meter_usage
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, group_value, minute;
