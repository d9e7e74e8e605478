-- Per-hour states, rolled up from the per-minute ones: a month of one customer's usage is 744 rows
-- instead of 44,640. Queries read whole hours here, the minutes of hours a window boundary cuts from
-- meter_usage_1m, and minutes a boundary cuts from raw rows.
CREATE TABLE IF NOT EXISTS meter_usage_1h (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  meter_id             String,
  revision             UInt32,
  external_customer_id String,
  group_value          String,
  hour                 DateTime64(3, 'UTC'),
  events               SimpleAggregateFunction(sum, UInt64),
  value_sum            SimpleAggregateFunction(sum, Decimal(38, 12)),
  value_min            SimpleAggregateFunction(min, Decimal(38, 12)),
  value_max            SimpleAggregateFunction(max, Decimal(38, 12)),
  -- Σ value × milliseconds past the hour.
  value_ms_sum         SimpleAggregateFunction(sum, Decimal(76, 12)),
  uniques              AggregateFunction(uniqExact, String),
  latest               AggregateFunction(argMax, Decimal(38, 12), Tuple(DateTime64(3, 'UTC'), String))
) ENGINE = AggregatingMergeTree
ORDER BY (tenant_id, environment_id, meter_id, revision, external_customer_id, hour, group_value)
SETTINGS non_replicated_deduplication_window = 1000;

-- Source columns are qualified: the aliases below reuse their names.
CREATE MATERIALIZED VIEW IF NOT EXISTS meter_usage_1h_from_1m TO meter_usage_1h AS
SELECT m.tenant_id AS tenant_id, m.environment_id AS environment_id, m.meter_id AS meter_id, m.revision AS revision,
       m.external_customer_id AS external_customer_id, m.group_value AS group_value,
       toDateTime64(toStartOfHour(m.minute), 3, 'UTC') AS hour,
       toUInt64(sum(m.events)) AS events,
       sum(m.value_sum) AS value_sum,
       min(m.value_min) AS value_min,
       max(m.value_max) AS value_max,
       sum(m.value_ms_sum + toDecimal256(m.value_sum, 12) * (toUnixTimestamp64Milli(m.minute) - toUnixTimestamp64Milli(toDateTime64(toStartOfHour(m.minute), 3, 'UTC')))) AS value_ms_sum,
       uniqExactMergeState(m.uniques) AS uniques,
       argMaxMergeState(m.latest) AS latest
FROM meter_usage_1m AS m
GROUP BY tenant_id, environment_id, meter_id, revision, external_customer_id, group_value, hour;
