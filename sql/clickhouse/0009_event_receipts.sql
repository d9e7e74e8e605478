-- The receipt of the request that brought each stored id and each drop in (UsageEvent.receipt: random, per request, set
-- by the ingest process; 0 for rows written before this migration or outside intake). A stored copy read again after a
-- crash, a rebalance or a producer's retry has the same one; a client's copy sent again has another, even when two
-- ingest processes received both in the same millisecond, which the receipt instant alone took for one copy.
ALTER TABLE event_batches ADD COLUMN IF NOT EXISTS receipt UInt64 DEFAULT 0;
ALTER TABLE event_ids ADD COLUMN IF NOT EXISTS receipt UInt64 DEFAULT 0;
ALTER TABLE event_drops ADD COLUMN IF NOT EXISTS receipt UInt64 DEFAULT 0;

-- The views carry it; MODIFY QUERY swaps each one's query at once, so no insert passes between two views' versions.
ALTER TABLE event_ids_from_batches MODIFY QUERY
SELECT tenant_id, environment_id, id AS event_id, external_customer_id, event_name, timestamp, received_at, expires_at, receipt
FROM event_batches
WHERE kind = 'stored';

ALTER TABLE event_drops_from_batches MODIFY QUERY
SELECT tenant_id, environment_id, id AS event_id, kind, reason, timestamp, received_at, expires_at, receipt
FROM event_batches
WHERE kind != 'stored';
