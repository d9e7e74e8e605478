-- A 64-bit hash of each stored id, for the dedup lookup: a chunk's random ids touch nearly every granule of
-- event_ids, so a lookup scans the environment's dedup window; filtering on the hash first (PREWHERE) reads
-- 8 bytes a row instead of a 36-character id, and the ids only of the rows whose hash matched. Parts written
-- before this column compute it when read.
ALTER TABLE event_ids ADD COLUMN IF NOT EXISTS id_hash UInt64 MATERIALIZED sipHash64(event_id);
