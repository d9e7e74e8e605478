-- The ids a dedup lookup asks about, as data: each lookup inserts its ids under a key of its own, reads
-- event_ids IN them, and deletes them. As an Array(String) parameter, a list over about 1 MB (some 25,000
-- UUIDs) made the IN compare every row with every id (30,000 UUIDs against 200,000 rows: 35 s), and
-- below that its text cost ~3 µs an id to parse. In memory: nothing of it needs to outlive the process.
CREATE TABLE IF NOT EXISTS dedup_lookups (
  lookup   UInt64,
  event_id String
) ENGINE = Memory;
