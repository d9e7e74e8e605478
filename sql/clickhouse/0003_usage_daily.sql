-- Per-day (UTC) states, rolled up from the per-hour ones: a month of one customer's usage is 31 rows, a month of
-- an environment's 10,000 customers 310,000 instead of 7.4 million. Queries read whole days here, the hours of
-- days a window boundary cuts from meter_usage_1h, and so on down to raw rows.
CREATE TABLE IF NOT EXISTS meter_usage_1d (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  meter_id             String,
  revision             UInt32,
  external_customer_id String,
  group_value          String,
  day                  DateTime64(3, 'UTC'),
  events               SimpleAggregateFunction(sum, UInt64),
  value_sum            SimpleAggregateFunction(sum, Decimal(38, 12)),
  value_min            SimpleAggregateFunction(min, Decimal(38, 12)),
  value_max            SimpleAggregateFunction(max, Decimal(38, 12)),
  -- Σ value × milliseconds past the day.
  value_ms_sum         SimpleAggregateFunction(sum, Decimal(76, 12)),
  uniques              AggregateFunction(uniqExact, String),
  latest               AggregateFunction(argMax, Decimal(38, 12), Tuple(DateTime64(3, 'UTC'), String))
) ENGINE = AggregatingMergeTree
ORDER BY (tenant_id, environment_id, meter_id, revision, external_customer_id, day, group_value)
SETTINGS non_replicated_deduplication_window = 1000;

-- The view first, then the backfill of what meter_usage_1h already holds. Nothing writes while a migration runs
-- on chDB (every role migrates before it starts); on a ClickHouse server, apply this file with the aggregators
-- stopped: a batch landing between the two statements would be counted twice in the daily rows.
CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_1d_from_1h TO meter_usage_1d AS
SELECT h.tenant_id AS tenant_id, h.environment_id AS environment_id, h.meter_id AS meter_id, h.revision AS revision,
       h.external_customer_id AS external_customer_id, h.group_value AS group_value,
       toDateTime64(toStartOfDay(h.hour), 3, 'UTC') AS day,
       toUInt64(sum(h.events)) AS events,
       sum(h.value_sum) AS value_sum,
       min(h.value_min) AS value_min,
       max(h.value_max) AS value_max,
       sum(h.value_ms_sum + toDecimal256(h.value_sum, 12) * (toUnixTimestamp64Milli(h.hour) - toUnixTimestamp64Milli(toDateTime64(toStartOfDay(h.hour), 3, 'UTC')))) AS value_ms_sum,
       uniqExactMergeState(h.uniques) AS uniques,
       argMaxMergeState(h.latest) AS latest
FROM meter_usage_1h AS h
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, group_value, day;

INSERT INTO meter_usage_1d
SELECT h.tenant_id AS tenant_id, h.environment_id AS environment_id, h.meter_id AS meter_id, h.revision AS revision,
       h.external_customer_id AS external_customer_id, h.group_value AS group_value,
       toDateTime64(toStartOfDay(h.hour), 3, 'UTC') AS day,
       toUInt64(sum(h.events)) AS events,
       sum(h.value_sum) AS value_sum,
       min(h.value_min) AS value_min,
       max(h.value_max) AS value_max,
       sum(h.value_ms_sum + toDecimal256(h.value_sum, 12) * (toUnixTimestamp64Milli(h.hour) - toUnixTimestamp64Milli(toDateTime64(toStartOfDay(h.hour), 3, 'UTC')))) AS value_ms_sum,
       uniqExactMergeState(h.uniques) AS uniques,
       argMaxMergeState(h.latest) AS latest
FROM meter_usage_1h AS h
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, group_value, day;
