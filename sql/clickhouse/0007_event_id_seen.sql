-- The dedup filter's generations (aggregator/dedup-filter.ts): a generation is a Set table event_id_seen_<g> of
-- sipHash64(tenant_id, environment_id, event_id), fed by a view on event_batches (the insert that writes event_ids)
-- and filled once from event_ids; a row here marks it filled, so lookups may trust a miss in it. The tables and
-- views are made and dropped by the inserting processes as generations rotate, not by migrations.
CREATE TABLE IF NOT EXISTS event_id_seen_generations (
  generation           UInt32,
  filled_at            DateTime64(3, 'UTC')
) ENGINE = MergeTree
ORDER BY generation;
