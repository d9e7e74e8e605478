-- Usage corrections (docs/usage.md, "Corrections"): a cancelled event's meter rows are cancelled by rows of sign -1 that
-- every additive measure sums (events, value_sum, value_ms_sum), in meter_usage and in the rollups its views feed. A
-- cancel row carries the original's value, group, unique value and instant, so the non-additive states (min, max,
-- uniques, latest) are unchanged by it: corrections of events feeding MIN, MAX, COUNT_UNIQUE or LATEST meters are
-- refused (domains/usage/corrections). Rows written before this migration have sign 1.
ALTER TABLE meter_usage ADD COLUMN IF NOT EXISTS sign Int8 DEFAULT 1;

ALTER TABLE meter_usage_sourced ADD COLUMN IF NOT EXISTS sign Int8 DEFAULT 1;

-- One row per cancelled stored event: read back by the repair of pending corrections (was it written?), by the raw
-- event reads (a cancelled event is left out) and by the reconciliation report (corrected). Fed by the same insert
-- that writes the cancel rows, so both land or neither (a retry with the same insert_deduplication_token is dropped).
CREATE TABLE IF NOT EXISTS event_cancellations (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  event_id             String,
  external_customer_id String,
  event_name           LowCardinality(String),
  timestamp            DateTime64(3, 'UTC'),
  correction_id        String,
  inserted_at          DateTime64(3, 'UTC') DEFAULT now64(3)
) ENGINE = ReplacingMergeTree
ORDER BY (tenant_id, environment_id, event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- The insert of a batch of cancellations: one row per cancelled event with its meter rows as arrays (as event_batches).
CREATE TABLE IF NOT EXISTS event_cancellations_in (
  tenant_id            String,
  environment_id       String,
  event_id             String,
  external_customer_id String,
  event_name           String,
  source               String,
  timestamp            DateTime64(3, 'UTC'),
  correction_id        String,
  meter_ids            Array(String),
  revisions            Array(UInt32),
  meter_values         Array(Decimal(38, 12)),
  group_values         Array(String),
  unique_values        Array(String)
) ENGINE = Null;

-- The sign-aware rollup queries first, so no cancel row reaches a view that would count it as usage. MODIFY QUERY
-- swaps each query at once: no insert passes between two versions.
ALTER TABLE meter_usage_1m_from_usage MODIFY QUERY
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, group_value,
       toDateTime64(toStartOfMinute(timestamp), 3, 'UTC') AS minute,
       -- A minute holding only a cancel row stores 2^64-1 (UInt64 wraps); summed with its original's 1 it is 0.
       toUInt64(sum(sign)) AS events,
       sum(value * sign) AS value_sum,
       min(value) AS value_min,
       max(value) AS value_max,
       sum(toDecimal256(value, 12) * sign * (toUnixTimestamp64Milli(timestamp) % 60000)) AS value_ms_sum,
       uniqExactState(unique_value) AS uniques,
       argMaxState(value, (timestamp, event_id)) AS latest
FROM meter_usage
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, group_value, minute;

ALTER TABLE meter_usage_by_source_1h_from_sourced MODIFY QUERY
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id,
       toDateTime64(toStartOfHour(timestamp), 3, 'UTC') AS hour,
       source, group_value,
       toUInt64(sum(sign)) AS events,
       sum(value * sign) AS value_sum,
       min(value) AS value_min,
       max(value) AS value_max,
       sum(toDecimal256(value, 12) * sign * (toUnixTimestamp64Milli(timestamp) % 3600000)) AS value_ms_sum,
       uniqExactState(unique_value) AS uniques,
       argMaxState(value, concat(reverse(reinterpretAsFixedString(toUInt64(toUnixTimestamp64Milli(timestamp)))), event_id)) AS latest
FROM meter_usage_sourced
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, hour, source, group_value;

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_from_cancellations TO meter_usage AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, timestamp, event_id, value, group_value,
       unique_value, toInt8(-1) AS sign
FROM event_cancellations_in
ARRAY JOIN meter_ids AS meter_id, revisions AS revision, meter_values AS value, group_values AS group_value,
           unique_values AS unique_value;

CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_sourced_from_cancellations TO meter_usage_sourced AS
SELECT tenant_id, environment_id, meter_id, revision, external_customer_id, source, timestamp, event_id, value,
       group_value, unique_value, toInt8(-1) AS sign
FROM event_cancellations_in
ARRAY JOIN meter_ids AS meter_id, revisions AS revision, meter_values AS value, group_values AS group_value,
           unique_values AS unique_value;

CREATE MATERIALIZED VIEW IF NOT EXISTS event_cancellations_from_in TO event_cancellations AS
SELECT tenant_id, environment_id, event_id, external_customer_id, event_name, timestamp, correction_id, now64(3) AS inserted_at
FROM event_cancellations_in;
