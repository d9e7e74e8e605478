-- Usage by source, for analytics (docs/analytics.md). meter_usage rows carry no source, so the breakdown rollups are
-- fed from meter_usage_sourced: a Null table holding meter_usage's rows with their event's source, written by the same
-- statements that write meter_usage (the batch insert into event_batches, and the meter backfill's insert into
-- meter_usage_backfill), so a batch or a backfill page lands in every table or is retried whole, and a retry
-- (same insert_deduplication_token) is dropped by every target (non_replicated_deduplication_window).
--
--   event_batches ─MV─▶ meter_usage ─MV─▶ _1m ─▶ _1h ─▶ _1d                     (0001-0003)
--                 └MV─▶ meter_usage_sourced (Null) ─MV─▶ meter_usage_by_source_1h ─MV─▶ meter_usage_by_source_env_1h
--   meter_usage_backfill (Null) ─MV─▶ meter_usage     (and on as above)
--                               └MV─▶ meter_usage_sourced (and on as above)
--
-- Hours only: a query reads whole hours here and the hours a boundary cuts from raw rows (meter_usage joined to
-- events for the source), exact at the millisecond. The environment table has no customer column: a month of the
-- whole environment by source is 744 rows a source, whatever the number of customers.

CREATE TABLE IF NOT EXISTS meter_usage_sourced (
  tenant_id            String,
  environment_id       String,
  meter_id             String,
  revision             UInt32,
  external_customer_id String,
  source               String,
  timestamp            DateTime64(3, 'UTC'),
  event_id             String,
  value                Decimal(38, 12),
  group_value          String,
  unique_value         String
) ENGINE = Null;

-- The meter backfill's rows (aggregator/backfill.ts): one insert writes meter_usage and the breakdowns.
CREATE TABLE IF NOT EXISTS meter_usage_backfill AS meter_usage_sourced ENGINE = Null;

-- Per customer, hour and source: one customer's month is 744 rows a source.
CREATE TABLE IF NOT EXISTS meter_usage_by_source_1h (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  meter_id             String,
  revision             UInt32,
  external_customer_id String,
  hour                 DateTime64(3, 'UTC'),
  source               LowCardinality(String),
  group_value          String,
  events               SimpleAggregateFunction(sum, UInt64),
  value_sum            SimpleAggregateFunction(sum, Decimal(38, 12)),
  value_min            SimpleAggregateFunction(min, Decimal(38, 12)),
  value_max            SimpleAggregateFunction(max, Decimal(38, 12)),
  -- Σ value × milliseconds past the hour.
  value_ms_sum         SimpleAggregateFunction(sum, Decimal(76, 12)),
  uniques              AggregateFunction(uniqExact, String),
  -- The value of the latest row by (timestamp, event_id), keyed by one string that sorts as that pair (see below).
  latest               AggregateFunction(argMax, Decimal(38, 12), String)
) ENGINE = AggregatingMergeTree
ORDER BY (tenant_id, environment_id, meter_id, revision, external_customer_id, hour, source, group_value)
SETTINGS non_replicated_deduplication_window = 1000;

-- Per hour and source for the whole environment (no customer column).
CREATE TABLE IF NOT EXISTS meter_usage_by_source_env_1h (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  meter_id             String,
  revision             UInt32,
  hour                 DateTime64(3, 'UTC'),
  source               LowCardinality(String),
  group_value          String,
  events               SimpleAggregateFunction(sum, UInt64),
  value_sum            SimpleAggregateFunction(sum, Decimal(38, 12)),
  value_min            SimpleAggregateFunction(min, Decimal(38, 12)),
  value_max            SimpleAggregateFunction(max, Decimal(38, 12)),
  value_ms_sum         SimpleAggregateFunction(sum, Decimal(76, 12)),
  uniques              AggregateFunction(uniqExact, String),
  latest               AggregateFunction(argMax, Decimal(38, 12), String)
) ENGINE = AggregatingMergeTree
ORDER BY (tenant_id, environment_id, meter_id, revision, hour, source, group_value)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_by_source_1h_from_sourced TO meter_usage_by_source_1h AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id,
       toDateTime64(toStartOfHour(timestamp), 3, 'UTC') AS hour,
       source, group_value,
       toUInt64(count()) AS events,
       sum(value) AS value_sum,
       min(value) AS value_min,
       max(value) AS value_max,
       sum(toDecimal256(value, 12) * (toUnixTimestamp64Milli(timestamp) % 3600000)) AS value_ms_sum,
       uniqExactState(unique_value) AS uniques,
       argMaxState(value, concat(reverse(reinterpretAsFixedString(toUInt64(toUnixTimestamp64Milli(timestamp)))), event_id)) AS latest
FROM meter_usage_sourced
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, hour, source, group_value;

-- Source columns are qualified: the aliases reuse their names.
CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_by_source_env_1h_from_1h TO meter_usage_by_source_env_1h AS
SELECT h.tenant_id AS tenant_id, h.environment_id AS environment_id, h.meter_id AS meter_id, h.revision AS revision,
       h.hour AS hour, h.source AS source, h.group_value AS group_value,
       toUInt64(sum(h.events)) AS events,
       sum(h.value_sum) AS value_sum,
       min(h.value_min) AS value_min,
       max(h.value_max) AS value_max,
       sum(h.value_ms_sum) AS value_ms_sum,
       uniqExactMergeState(h.uniques) AS uniques,
       argMaxMergeState(h.latest) AS latest
FROM meter_usage_by_source_1h AS h
GROUP BY tenant_id, environment_id, meter_id, revision, hour, source, group_value;

-- Rows stored before this migration: meter_usage joined to events for the source, through the views above. Emptied
-- first, so a rerun of this file after a failure further down recomputes rather than adds. Nothing writes while
-- migrations run on chDB; on a ClickHouse server apply this file with the aggregators and the meter backfill stopped
-- (a batch landing between this statement and the next view would be missing from the breakdowns).
TRUNCATE TABLE IF EXISTS meter_usage_by_source_env_1h;

TRUNCATE TABLE IF EXISTS meter_usage_by_source_1h;

INSERT INTO meter_usage_sourced
SELECT m.tenant_id, m.environment_id, m.meter_id, m.revision, m.external_customer_id, e.source, m.timestamp, m.event_id,
       m.value, m.group_value, m.unique_value
FROM meter_usage AS m
INNER JOIN (SELECT tenant_id, environment_id, external_customer_id, id, source FROM events) AS e
  ON m.tenant_id = e.tenant_id AND m.environment_id = e.environment_id AND m.external_customer_id = e.external_customer_id
     AND m.event_id = e.id
SETTINGS join_algorithm = 'grace_hash', grace_hash_join_initial_buckets = 8;

-- From now on the batch insert feeds the breakdowns.
CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_sourced_from_batches TO meter_usage_sourced AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, source, timestamp, id AS event_id,
       value, group_value, unique_value
FROM event_batches
ARRAY JOIN meter_ids AS meter_id, revisions AS revision, meter_values AS value, group_values AS group_value,
           unique_values AS unique_value
WHERE kind = 'stored';

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_from_backfill TO meter_usage AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, timestamp, event_id, value, group_value,
       unique_value
FROM meter_usage_backfill;

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_sourced_from_backfill TO meter_usage_sourced AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, source, timestamp, event_id, value, group_value,
       unique_value
FROM meter_usage_backfill;
