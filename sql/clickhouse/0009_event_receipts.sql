-- The intake record each stored id and each drop came from (aggregator/consumer.ts kafkaRecord, log-inserter.ts
-- logRecord; 0 for rows written before this migration or outside the intake path). A stored copy read again after a
-- crash or a rebalance is the same record; a client's copy sent again is another, even when two ingest processes
-- received them in the same millisecond, which the receipt instant alone took for one record.
ALTER TABLE event_batches ADD COLUMN IF NOT EXISTS record UInt64 DEFAULT 0;
ALTER TABLE event_ids ADD COLUMN IF NOT EXISTS record UInt64 DEFAULT 0;
ALTER TABLE event_drops ADD COLUMN IF NOT EXISTS record UInt64 DEFAULT 0;

-- The views carry it; MODIFY QUERY swaps each one's query at once, so no insert passes between two views' versions.
ALTER TABLE event_ids_from_batches MODIFY QUERY
SELECT tenant_id, environment_id, id AS event_id, external_customer_id, event_name, timestamp, received_at, expires_at, record
FROM event_batches
WHERE kind = 'stored';

ALTER TABLE event_drops_from_batches MODIFY QUERY
SELECT tenant_id, environment_id, id AS event_id, kind, reason, timestamp, received_at, expires_at, record
FROM event_batches
WHERE kind != 'stored';
