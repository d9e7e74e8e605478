-- When each id was stored, by the server's clock: the dedup filter (aggregator/dedup-filter.ts) loaded from its snapshot
-- adds the ids stored since. Rows stored before this migration take the migration's time. The Set generations of the
-- filter before it (0007) are dropped by the aggregator at its first start (their names vary); their marks here.
ALTER TABLE event_ids ADD COLUMN IF NOT EXISTS inserted_at DateTime DEFAULT now();

-- now() in a mutation: each replica of a cluster takes its own instant, close enough for a top-up's 10-minute margin.
ALTER TABLE event_ids MATERIALIZE COLUMN inserted_at SETTINGS allow_nondeterministic_mutations = 1;

DROP TABLE IF EXISTS event_id_seen_generations;

-- A top-up reads the rows stored since a snapshot: old parts (merged before it) are skipped whole by their granules'
-- range, and only recent parts are read, not the whole column.
ALTER TABLE event_ids ADD INDEX IF NOT EXISTS event_ids_inserted_at inserted_at TYPE minmax GRANULARITY 1;

ALTER TABLE event_ids MATERIALIZE INDEX event_ids_inserted_at;
