// The cluster rewriting on statements written for it: every kind it knows, the shapes a new migration may take (a view
// on event_batches into new tables, ALTER … ADD COLUMN), and the kinds it refuses. The migration files themselves are
// rewritten and parse-checked on chDB in infra/cluster-migrations.test.ts.
import { describe, expect, it } from 'vitest'
import { clusterMigrations, clusterMigrationsTable, clusterStatement, noTables, shardingKey, type ClusterTables } from './cluster-ddl.ts'

const C = 'meterbill'
const flat = (s: string) => s.replace(/\s+/g, ' ').trim()
const run = (tables: ClusterTables, ...statements: string[]) => statements.flatMap((s) => clusterStatement(s, C, tables)).map(flat)

function withUsage(): ClusterTables {
  const tables = noTables()
  run(
    tables,
    `CREATE TABLE IF NOT EXISTS usage (tenant_id String, environment_id String, external_customer_id String, n UInt64,
       INDEX i n TYPE minmax GRANULARITY 1) ENGINE = MergeTree ORDER BY tenant_id SETTINGS non_replicated_deduplication_window = 1000`,
    'CREATE TABLE batches (tenant_id String, environment_id String, external_customer_id String, n UInt64) ENGINE = Null',
  )
  return tables
}

describe('cluster DDL', () => {
  it('makes a MergeTree table a replicated _local table and a Distributed table of its name, ON CLUSTER and IF NOT EXISTS', () => {
    const tables = noTables()
    expect(run(tables, 'CREATE TABLE t (tenant_id String, environment_id String, v UInt64) ENGINE = MergeTree ORDER BY tenant_id SETTINGS non_replicated_deduplication_window = 1000')).toEqual([
      "CREATE TABLE IF NOT EXISTS t_local ON CLUSTER meterbill (tenant_id String, environment_id String, v UInt64) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/t_local', '{replica}') ORDER BY tenant_id SETTINGS replicated_deduplication_window = 1000",
      "CREATE TABLE IF NOT EXISTS t ON CLUSTER meterbill AS t_local ENGINE = Distributed('meterbill', currentDatabase(), t_local, cityHash64(tenant_id, environment_id))",
    ])
    expect([...tables.replicated.keys()]).toEqual(['t'])
  })

  it('keeps the engine arguments after the two of replication', () => {
    const [local] = run(noTables(), 'CREATE TABLE s (k String, events UInt64) ENGINE = SummingMergeTree(events) ORDER BY k')
    expect(local).toContain("ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/s_local', '{replica}', events)")
    const [replacing] = run(noTables(), 'CREATE TABLE r (k String, v UInt64) ENGINE = ReplacingMergeTree(v) ORDER BY k')
    expect(replacing).toContain("ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/r_local', '{replica}', v)")
    const [aggregating] = run(noTables(), 'CREATE TABLE IF NOT EXISTS a (k String) ENGINE = AggregatingMergeTree() ORDER BY k')
    expect(aggregating).toContain("ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/a_local', '{replica}')")
  })

  it('leaves Null, Set and Memory tables one per node, ON CLUSTER, copying the structure of a local table', () => {
    const tables = withUsage()
    expect(run(tables, 'CREATE TABLE IF NOT EXISTS s (h UInt64) ENGINE = Set', 'CREATE TABLE m (h UInt64) ENGINE = Memory', 'CREATE TABLE IF NOT EXISTS b2 AS batches ENGINE = Null')).toEqual([
      'CREATE TABLE IF NOT EXISTS s ON CLUSTER meterbill (h UInt64) ENGINE = Set',
      'CREATE TABLE IF NOT EXISTS m ON CLUSTER meterbill (h UInt64) ENGINE = Memory',
      'CREATE TABLE IF NOT EXISTS b2 ON CLUSTER meterbill AS batches ENGINE = Null',
    ])
    // A replicated table's structure is its local table's.
    expect(run(tables, 'CREATE TABLE copy AS usage ENGINE = Null')).toEqual(['CREATE TABLE IF NOT EXISTS copy ON CLUSTER meterbill AS usage_local ENGINE = Null'])
    expect(tables.local.get('copy')).toEqual(['tenant_id', 'environment_id', 'external_customer_id', 'n'])
  })

  it('points a view at the local tables it is triggered by and writes, a join at the Distributed one', () => {
    const tables = withUsage()
    run(tables, 'CREATE TABLE usage_1h (tenant_id String, environment_id String, n UInt64) ENGINE = SummingMergeTree ORDER BY tenant_id')
    expect(run(tables, 'CREATE MATERIALIZED VIEW IF NOT EXISTS v1 TO usage AS SELECT tenant_id, environment_id, external_customer_id, n FROM batches')).toEqual([
      'CREATE MATERIALIZED VIEW IF NOT EXISTS v1 ON CLUSTER meterbill TO usage_local AS SELECT tenant_id, environment_id, external_customer_id, n FROM batches',
    ])
    expect(
      run(
        tables,
        `CREATE MATERIALIZED VIEW v2 TO usage_1h AS
         SELECT u.tenant_id AS tenant_id, u.environment_id AS environment_id, sum(u.n + extract(toString(now()), '1' FROM '1')) AS n
         FROM (SELECT * FROM usage) AS u LEFT JOIN usage AS o ON o.tenant_id = u.tenant_id GROUP BY tenant_id, environment_id`,
      ),
    ).toEqual([
      "CREATE MATERIALIZED VIEW IF NOT EXISTS v2 ON CLUSTER meterbill TO usage_1h_local AS SELECT u.tenant_id AS tenant_id, u.environment_id AS environment_id, sum(u.n + extract(toString(now()), '1' FROM '1')) AS n FROM (SELECT * FROM usage_local) AS u LEFT JOIN usage AS o ON o.tenant_id = u.tenant_id GROUP BY tenant_id, environment_id",
    ])
  })

  it('inserts a backfill into the local table on the migrating node, reading the Distributed ones, without Keeper dedup', () => {
    const tables = withUsage()
    expect(run(tables, 'INSERT INTO usage SELECT * FROM usage WHERE n > 1')).toEqual(['INSERT INTO usage_local SETTINGS insert_deduplicate = 0 SELECT * FROM usage WHERE n > 1'])
    expect(run(tables, 'INSERT INTO usage (tenant_id, n) SETTINGS max_threads = 2 VALUES (1, 2)')).toEqual([
      'INSERT INTO usage_local (tenant_id, n) SETTINGS insert_deduplicate = 0, max_threads = 2 VALUES (1, 2)',
    ])
    // A Null table's views do the writing, into the replicated tables.
    expect(run(tables, 'INSERT INTO batches SELECT * FROM usage')).toEqual(['INSERT INTO batches SELECT * FROM usage'])
  })

  it('truncates, deletes and optimizes the local tables on every node', () => {
    const tables = withUsage()
    expect(run(tables, 'TRUNCATE TABLE IF EXISTS usage', 'TRUNCATE usage', 'TRUNCATE TABLE batches', 'DELETE FROM usage WHERE n = 0', 'OPTIMIZE TABLE usage FINAL')).toEqual([
      'TRUNCATE TABLE IF EXISTS usage_local ON CLUSTER meterbill',
      'TRUNCATE usage_local ON CLUSTER meterbill',
      'TRUNCATE TABLE batches ON CLUSTER meterbill',
      'DELETE FROM usage_local ON CLUSTER meterbill WHERE n = 0',
      'OPTIMIZE TABLE usage_local ON CLUSTER meterbill FINAL',
    ])
  })

  it('alters the local table, and the Distributed one too for its columns: added after, dropped before', () => {
    const tables = withUsage()
    expect(run(tables, 'ALTER TABLE usage ADD COLUMN IF NOT EXISTS h UInt64 MATERIALIZED sipHash64(tenant_id), MODIFY TTL now() + 1')).toEqual([
      'ALTER TABLE usage_local ON CLUSTER meterbill ADD COLUMN IF NOT EXISTS h UInt64 MATERIALIZED sipHash64(tenant_id), MODIFY TTL now() + 1',
      'ALTER TABLE usage ON CLUSTER meterbill ADD COLUMN IF NOT EXISTS h UInt64 MATERIALIZED sipHash64(tenant_id)',
    ])
    expect(tables.replicated.get('usage')).toContain('h')
    expect(run(tables, 'ALTER TABLE usage DROP COLUMN h')).toEqual(['ALTER TABLE usage ON CLUSTER meterbill DROP COLUMN IF EXISTS h', 'ALTER TABLE usage_local ON CLUSTER meterbill DROP COLUMN IF EXISTS h'])
    expect(run(tables, 'ALTER TABLE usage MODIFY SETTING merge_with_ttl_timeout = 3600')).toEqual(['ALTER TABLE usage_local ON CLUSTER meterbill MODIFY SETTING merge_with_ttl_timeout = 3600'])
    expect(run(tables, 'ALTER TABLE batches ADD COLUMN x String')).toEqual(['ALTER TABLE batches ON CLUSTER meterbill ADD COLUMN IF NOT EXISTS x String'])
  })

  it('drops both tables of a replicated one, the local one SYNC, and forgets it', () => {
    const tables = withUsage()
    expect(run(tables, 'DROP VIEW IF EXISTS v1', 'DROP TABLE IF EXISTS usage', 'DROP TABLE batches')).toEqual([
      'DROP VIEW IF EXISTS v1 ON CLUSTER meterbill',
      'DROP TABLE IF EXISTS usage ON CLUSTER meterbill',
      'DROP TABLE IF EXISTS usage_local ON CLUSTER meterbill SYNC',
      'DROP TABLE batches ON CLUSTER meterbill',
    ])
    expect(tables).toEqual(noTables())
  })

  it('keeps a database prefix and backquotes', () => {
    const out = run(noTables(), 'CREATE TABLE db.`my t` (tenant_id String) ENGINE = MergeTree ORDER BY tenant_id')
    expect(out[0]).toContain("CREATE TABLE IF NOT EXISTS db.`my t_local` ON CLUSTER meterbill")
    expect(out[1]).toBe("CREATE TABLE IF NOT EXISTS db.`my t` ON CLUSTER meterbill AS db.`my t_local` ENGINE = Distributed('meterbill', 'db', `my t_local`, rand())")
  })

  it.each([
    ['SET max_threads = 1', 'does not know'],
    ['CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY a AS SELECT 1', 'AS SELECT'],
    ['CREATE TABLE t (a UInt8) ORDER BY a', 'without ENGINE'],
    ["CREATE TABLE t (a UInt8) ENGINE = ReplicatedMergeTree('/p', '{replica}') ORDER BY a", 'plain engines'],
    ['CREATE TABLE t ON CLUSTER x (a UInt8) ENGINE = Null', 'must not name a cluster'],
    ['CREATE MATERIALIZED VIEW v ENGINE = MergeTree ORDER BY a AS SELECT 1 AS a', 'without TO'],
    ['CREATE MATERIALIZED VIEW v TO t POPULATE AS SELECT 1 AS a', 'POPULATE'],
    ['CREATE OR REPLACE TABLE t (a UInt8) ENGINE = Null', 'OR REPLACE'],
    ['CREATE TABLE c AS nowhere ENGINE = Null', 'not known'],
    ['RENAME TABLE a TO b', 'does not know'],
  ])('refuses %s', (statement, message) => {
    expect(() => clusterStatement(statement, C, noTables())).toThrow(message)
  })

  it('refuses a cluster name that is not an identifier', () => {
    expect(() => clusterStatement('TRUNCATE t', 'a; DROP', noTables())).toThrow('plain identifier')
    expect(() => clusterMigrationsTable('x y')).toThrow('plain identifier')
  })

  it('spreads a Distributed table by customer, else environment, else at random', () => {
    expect(shardingKey(['tenant_id', 'environment_id', 'external_customer_id'])).toBe('cityHash64(tenant_id, environment_id, external_customer_id)')
    expect(shardingKey(['tenant_id', 'environment_id'])).toBe('cityHash64(tenant_id, environment_id)')
    expect(shardingKey(['generation'])).toBe('rand()')
  })

  it('rewrites a file knowing the tables of the files before it, the same way every time', () => {
    const files = [
      { name: '0001.sql', statements: ['CREATE TABLE b (tenant_id String) ENGINE = Null', 'CREATE TABLE t (tenant_id String) ENGINE = MergeTree ORDER BY tenant_id'] },
      { name: '0002.sql', statements: ['CREATE TABLE n (tenant_id String) ENGINE = AggregatingMergeTree ORDER BY tenant_id', 'CREATE MATERIALIZED VIEW v TO n AS SELECT tenant_id FROM t', 'ALTER TABLE t ADD COLUMN x UInt8'] },
    ]
    const once = clusterMigrations(files, C)
    expect(clusterMigrations(files, C)).toEqual(once)
    expect(once[1].statements.map(flat)).toEqual([
      "CREATE TABLE IF NOT EXISTS n_local ON CLUSTER meterbill (tenant_id String) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/{database}/n_local', '{replica}') ORDER BY tenant_id",
      "CREATE TABLE IF NOT EXISTS n ON CLUSTER meterbill AS n_local ENGINE = Distributed('meterbill', currentDatabase(), n_local, rand())",
      'CREATE MATERIALIZED VIEW IF NOT EXISTS v ON CLUSTER meterbill TO n_local AS SELECT tenant_id FROM t_local',
      'ALTER TABLE t_local ON CLUSTER meterbill ADD COLUMN IF NOT EXISTS x UInt8',
      'ALTER TABLE t ON CLUSTER meterbill ADD COLUMN IF NOT EXISTS x UInt8',
    ])
  })

  it('makes the bookkeeping table one replicated table across every node of every shard', () => {
    expect(flat(clusterMigrationsTable(C))).toBe(
      "CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER meterbill (name String, checksum String, applied_at DateTime64(3, 'UTC')) ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/{database}/schema_migrations', '{shard}-{replica}') ORDER BY name",
    )
  })
})
