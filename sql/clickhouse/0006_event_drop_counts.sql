-- Events not stored, counted per customer, event name, outcome and instant, for the usage reconciliation report
-- (docs/analytics.md): event_drops keeps each dropped copy only for the dedup window (its TTL) and without the
-- customer or event name, so "how many duplicates and rejections did this customer's March have" could not be
-- answered once March was 35 days old. This table keeps no TTL; it is fed by the batch insert's own statement
-- (event_batches, like every table of 0001), so a retried batch (same insert_deduplication_token) counts once.
-- Only drop rows reach it: a batch of stored events costs the view one filter pass over its `kind` column.
-- A storm of retries of one event collapses into one row (SummingMergeTree on the whole key).

CREATE TABLE IF NOT EXISTS event_drop_counts (
  tenant_id            LowCardinality(String),
  environment_id       LowCardinality(String),
  external_customer_id String,
  event_name           LowCardinality(String),
  -- duplicate or rejected
  kind                 LowCardinality(String),
  timestamp            DateTime64(3, 'UTC'),
  events               UInt64
) ENGINE = SummingMergeTree(events)
ORDER BY (tenant_id, environment_id, external_customer_id, event_name, kind, timestamp)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS event_drop_counts_from_batches TO event_drop_counts AS
SELECT tenant_id, environment_id, external_customer_id, event_name, kind, timestamp, toUInt64(count()) AS events
FROM event_batches
WHERE kind != 'stored'
GROUP BY tenant_id, environment_id, external_customer_id, event_name, kind, timestamp;

-- Drops recorded before this migration and still kept: a duplicate's customer and event name are its stored copy's
-- (event_ids); a rejection's are not known (counted under an empty customer). Emptied first, so a rerun after a
-- failure recomputes rather than adds. On a ClickHouse server apply it with the aggregators stopped (as 0003, 0005).
TRUNCATE TABLE event_drop_counts;

INSERT INTO event_drop_counts
SELECT d.tenant_id, d.environment_id, i.external_customer_id, i.event_name, d.kind, d.timestamp, toUInt64(count()) AS events
FROM event_drops AS d
ANY LEFT JOIN event_ids AS i ON i.tenant_id = d.tenant_id AND i.environment_id = d.environment_id AND i.event_id = d.event_id
GROUP BY d.tenant_id, d.environment_id, i.external_customer_id, i.event_name, d.kind, d.timestamp;
