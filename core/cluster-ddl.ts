// ClickHouse cluster mode (CLICKHOUSE_CLUSTER): the migrations' statements rewritten for a replicated cluster. Pure
// text in, text out; infra/migrate.ts applies the result. What a statement becomes:
//
//   CREATE TABLE t … ENGINE = XMergeTree(args)   → t_local ON CLUSTER, ReplicatedXMergeTree('/clickhouse/tables/{shard}/
//                                                   {database}/t_local', '{replica}', args), and t ON CLUSTER as
//                                                   Distributed(cluster, currentDatabase(), t_local, sharding key):
//                                                   every read in the code keeps its table name and fans out.
//   CREATE TABLE n … ENGINE = Null | Set | …     → n ON CLUSTER: a table of each node, never replicated.
//   CREATE MATERIALIZED VIEW v TO t AS … FROM s  → ON CLUSTER, TO t_local, FROM s_local (the table whose inserts
//                                                   trigger it: inserts reach the local tables, never the Distributed).
//   INSERT INTO t SELECT …                      → INTO t_local on the migrating node alone (replication copies it),
//                                                   reading the Distributed tables; insert_deduplicate = 0.
//   TRUNCATE, ALTER, DELETE, OPTIMIZE t         → on t_local ON CLUSTER; an ALTER of columns also on t.
//   DROP TABLE t                                → t and t_local ON CLUSTER.
//
// Every CREATE gets IF NOT EXISTS, so a run that failed halfway can run again. The statement kinds not listed are
// refused (ClusterDdlError): a new migration that needs one must teach this file first, and its test says so.
// docs/operations.md "ClickHouse cluster mode" has the reasons and what is not covered (several shards).

class ClusterDdlError extends Error {
  constructor(message: string, statement: string) {
    super(`cluster mode: ${message}: ${statement.replace(/\s+/g, ' ').slice(0, 160)}`)
    this.name = 'ClusterDdlError'
  }
}

/** What a replicated table's real (local) table is named after. */
export const LOCAL_SUFFIX = '_local'

/** What the rewriting knows of the tables the statements so far created: their columns, by name. */
export interface ClusterTables {
  /** MergeTree-family tables, created as `<name>_local` (Replicated) with `<name>` Distributed over it. */
  replicated: Map<string, string[]>
  /** Every other table (Null, Set, Memory, …): one of each node. */
  local: Map<string, string[]>
}

export function noTables(): ClusterTables {
  return { replicated: new Map(), local: new Map() }
}

/** The Keeper path of a replicated table: per shard and database, so every database of a cluster has its own. */
function replicaPath(table: string): string {
  return `/clickhouse/tables/{shard}/{database}/${table}`
}

/**
 * The key a Distributed table spreads inserts made through it over shards by: one customer's rows on one shard when
 * the table has a customer, else one environment's, else any. Only inserts through the Distributed table use it;
 * the migrations and views insert into the local tables (docs/operations.md, several shards).
 */
export function shardingKey(columns: readonly string[]): string {
  const has = (c: string) => columns.includes(c)
  if (has('tenant_id') && has('environment_id') && has('external_customer_id')) return 'cityHash64(tenant_id, environment_id, external_customer_id)'
  if (has('tenant_id') && has('environment_id')) return 'cityHash64(tenant_id, environment_id)'
  return 'rand()'
}

/**
 * The ClickHouse bookkeeping table of infra/migrate.ts on a cluster: one replicated table across every node of every
 * shard (no {shard} in its path), so whichever node a process migrates through knows what any node applied.
 */
export function clusterMigrationsTable(cluster: string): string {
  checkCluster(cluster)
  return `CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER ${cluster} (name String, checksum String, applied_at DateTime64(3, 'UTC'))
ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/{database}/schema_migrations', '{shard}-{replica}') ORDER BY name`
}

export interface MigrationStatements {
  name: string
  statements: readonly string[]
}

/** Every migration file's statements for the cluster, in order: a file's rewriting knows the tables of the files before it. */
export function clusterMigrations(files: readonly MigrationStatements[], cluster: string): MigrationStatements[] {
  const tables = noTables()
  return files.map((file) => ({ name: file.name, statements: file.statements.flatMap((s) => clusterStatement(s, cluster, tables)) }))
}

/** One statement's rewriting; `tables` learns the tables it creates, alters and drops. */
export function clusterStatement(statement: string, cluster: string, tables: ClusterTables): string[] {
  checkCluster(cluster)
  const s = new Statement(statement, cluster, tables)
  const first = s.word(0)
  if (first === 'CREATE') return s.create()
  if (first === 'INSERT') return s.insert()
  if (first === 'ALTER') return s.alter()
  if (first === 'TRUNCATE') return s.onTable(s.word(1) === 'TABLE' ? 2 : 1)
  if (first === 'OPTIMIZE' && s.word(1) === 'TABLE') return s.onTable(2)
  if (first === 'DELETE' && s.word(1) === 'FROM') return s.onTable(2)
  if (first === 'DROP') return s.drop()
  throw new ClusterDdlError('a statement this rewriting does not know', statement)
}

function checkCluster(cluster: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(cluster)) throw new Error(`cluster mode: the cluster name must be a plain identifier, got "${cluster}"`)
}

interface Token {
  kind: 'word' | 'quoted' | 'string' | 'number' | 'punct'
  text: string
  start: number
  end: number
  /** Parentheses around it; a parenthesis itself counts at the level outside it. */
  depth: number
}

function tokenize(sql: string): Token[] {
  const tokens: Token[] = []
  let depth = 0
  let i = 0
  const push = (kind: Token['kind'], start: number, end: number, d = depth) => tokens.push({ kind, text: sql.slice(start, end), start, end, depth: d })
  while (i < sql.length) {
    const c = sql[i]
    if (/\s/.test(c)) i++
    else if (sql.startsWith('--', i)) i = sql.includes('\n', i) ? sql.indexOf('\n', i) + 1 : sql.length
    else if (sql.startsWith('/*', i)) i = sql.includes('*/', i + 2) ? sql.indexOf('*/', i + 2) + 2 : sql.length
    else if (c === "'" || c === '`' || c === '"') {
      let j = i + 1
      while (j < sql.length && sql[j] !== c) j += sql[j] === '\\' ? 2 : 1
      push(c === "'" ? 'string' : 'quoted', i, j + 1)
      i = j + 1
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z0-9_$]+/.exec(sql.slice(i))!
      push('word', i, i + m[0].length)
      i += m[0].length
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9][0-9A-Za-z_.]*/.exec(sql.slice(i))!
      push('number', i, i + m[0].length)
      i += m[0].length
    } else if (c === '(') {
      push('punct', i, i + 1)
      depth++
      i++
    } else if (c === ')') {
      depth--
      push('punct', i, i + 1)
      i++
    } else {
      push('punct', i, i + 1)
      i++
    }
  }
  return tokens
}

interface Name {
  /** The table's own name, unquoted. */
  bare: string
  /** `db.` as written, or empty. */
  prefix: string
  quoted: boolean
  /** Token indexes: the name's first, and the one after it. */
  from: number
  next: number
}

interface Edit {
  start: number
  end: number
  text: string
}

class Statement {
  readonly tokens: Token[]

  constructor(
    readonly sql: string,
    readonly cluster: string,
    readonly tables: ClusterTables,
  ) {
    this.tokens = tokenize(sql)
  }

  /** The token at `i` in capitals when it is a keyword-like word, else ''. */
  word(i: number): string {
    const t = this.tokens[i]
    return t?.kind === 'word' ? t.text.toUpperCase() : ''
  }

  fail(message: string): never {
    throw new ClusterDdlError(message, this.sql)
  }

  name(i: number): Name {
    const first = this.tokens[i]
    if (!first || (first.kind !== 'word' && first.kind !== 'quoted')) this.fail('a table name was expected')
    let last = i
    if (this.tokens[i + 1]?.text === '.' && ['word', 'quoted'].includes(this.tokens[i + 2]?.kind ?? '')) last = i + 2
    const token = this.tokens[last]
    const quoted = token.kind === 'quoted'
    return {
      bare: quoted ? token.text.slice(1, -1) : token.text,
      prefix: last === i ? '' : this.sql.slice(first.start, token.start),
      quoted,
      from: i,
      next: last + 1,
    }
  }

  /** The name of the same table with a suffix (`events` → `events_local`), quoted as it was. */
  named(n: Name, suffix = LOCAL_SUFFIX): string {
    const bare = n.bare + suffix
    return n.prefix + (n.quoted ? `\`${bare}\`` : bare)
  }

  /** `IF [NOT] EXISTS` at `i`: the index after it, or `i`. */
  skipIf(i: number, not: boolean): number {
    if (this.word(i) !== 'IF') return i
    return not ? i + 3 : i + 2
  }

  noCluster(i: number): void {
    if (this.word(i) === 'ON' && this.word(i + 1) === 'CLUSTER') this.fail('migrations must not name a cluster (ON CLUSTER is added in cluster mode)')
  }

  apply(edits: Edit[], sql = this.sql): string {
    let out = sql
    for (const e of [...edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end)
    return out
  }

  /** Replace the name at `n` by `text` followed by ON CLUSTER, with IF NOT EXISTS before it when `addIfNotExists`. */
  renameEdits(n: Name, text: string, addIfNotExists = false): Edit[] {
    const at = this.tokens[n.from].start
    return [{ start: at, end: this.tokens[n.next - 1].end, text: `${addIfNotExists ? 'IF NOT EXISTS ' : ''}${text} ON CLUSTER ${this.cluster}` }]
  }

  create(): string[] {
    let i = 1
    if (this.word(1) === 'OR' || this.word(1) === 'TEMPORARY') this.fail('CREATE OR REPLACE and temporary tables are not rewritten')
    if (this.word(1) === 'TABLE') return this.createTable()
    if (this.word(1) === 'MATERIALIZED' && this.word(2) === 'VIEW') return this.createView()
    if (['VIEW', 'DICTIONARY', 'FUNCTION'].includes(this.word(1))) {
      i = 2
      const after = this.skipIf(i, true)
      const n = this.name(after)
      this.noCluster(n.next)
      return [this.apply(this.renameEdits(n, this.sql.slice(this.tokens[n.from].start, this.tokens[n.next - 1].end), after === i))]
    }
    return this.fail('a CREATE this rewriting does not know')
  }

  /** The column names of the parenthesized list opening at token `open`, and the index after its close. */
  columns(open: number): { columns: string[]; next: number } {
    const depth = this.tokens[open].depth
    const columns: string[] = []
    let i = open + 1
    let start = true
    for (; i < this.tokens.length; i++) {
      const t = this.tokens[i]
      if (t.depth === depth && t.text === ')') break
      if (t.depth === depth + 1 && t.text === ',') {
        start = true
        continue
      }
      if (start) {
        start = false
        const w = t.kind === 'word' ? t.text.toUpperCase() : ''
        if (!['INDEX', 'PROJECTION', 'CONSTRAINT', 'PRIMARY'].includes(w)) columns.push(t.kind === 'quoted' ? t.text.slice(1, -1) : t.text)
      }
    }
    return { columns, next: i + 1 }
  }

  createTable(): string[] {
    const after = this.skipIf(2, true)
    const n = this.name(after)
    this.noCluster(n.next)
    const edits: Edit[] = []
    let columns: string[] = []
    let i = n.next
    if (this.tokens[i]?.text === '(') {
      const list = this.columns(i)
      columns = list.columns
      i = list.next
    }
    if (this.word(i) === 'AS') {
      if (this.word(i + 1) === 'SELECT' || this.tokens[i + 1]?.text === '(') this.fail('CREATE TABLE … AS SELECT is not rewritten: create the table, then INSERT … SELECT')
      const source = this.name(i + 1)
      const known = this.tables.replicated.get(source.bare) ?? this.tables.local.get(source.bare)
      if (!known) this.fail(`the columns of ${source.bare} are not known (created by no migration before)`)
      columns = [...known]
      if (this.tables.replicated.has(source.bare)) {
        edits.push({ start: this.tokens[source.from].start, end: this.tokens[source.next - 1].end, text: this.named(source) })
      }
      i = source.next
    }
    const engineAt = this.tokens.findIndex((t, k) => k >= i && t.depth === 0 && t.kind === 'word' && t.text.toUpperCase() === 'ENGINE')
    if (engineAt === -1) this.fail('a table without ENGINE (the default engine is a setting of each server)')
    let e = engineAt + 1
    if (this.tokens[e]?.text === '=') e++
    const engine = this.tokens[e]
    if (engine?.kind !== 'word') this.fail('an engine name was expected')
    if (/^(Replicated|Shared)/.test(engine.text) || engine.text === 'Distributed') this.fail(`migrations name plain engines, not ${engine.text}`)
    if (this.tokens.some((t, k) => k > e && t.depth === 0 && t.kind === 'word' && t.text.toUpperCase() === 'AS')) {
      this.fail('CREATE TABLE … AS SELECT is not rewritten: create the table, then INSERT … SELECT')
    }

    if (!engine.text.endsWith('MergeTree')) {
      this.tables.local.set(n.bare, columns)
      const name = this.sql.slice(this.tokens[n.from].start, this.tokens[n.next - 1].end)
      return [this.apply([...edits, ...this.renameEdits(n, name, after === 2)])]
    }

    // A MergeTree-family table: Replicated under _local, the engine's own arguments after the two of replication.
    const local = this.named(n)
    let args = ''
    let engineEnd = engine.end
    if (this.tokens[e + 1]?.text === '(') {
      const close = this.columns(e + 1).next - 1
      args = this.sql.slice(this.tokens[e + 1].end, this.tokens[close].start).trim()
      engineEnd = this.tokens[close].end
    }
    const replication = `'${replicaPath(n.bare + LOCAL_SUFFIX)}', '{replica}'`
    edits.push({ start: engine.start, end: engineEnd, text: `Replicated${engine.text}(${replication}${args ? `, ${args}` : ''})` })
    // Dedup of retried inserts (insert_deduplication_token) on replicas: Keeper keeps the block ids.
    for (const t of this.tokens) {
      if (t.kind === 'word' && t.text.toLowerCase() === 'non_replicated_deduplication_window') edits.push({ start: t.start, end: t.end, text: 'replicated_deduplication_window' })
    }
    edits.push(...this.renameEdits(n, local, after === 2))
    this.tables.replicated.set(n.bare, columns)
    const database = n.prefix ? `'${n.prefix.replace(/[.`\s]/g, '')}'` : 'currentDatabase()'
    const distributed = `CREATE TABLE IF NOT EXISTS ${this.named(n, '')} ON CLUSTER ${this.cluster} AS ${local}
ENGINE = Distributed('${this.cluster}', ${database}, ${n.quoted ? `\`${n.bare}${LOCAL_SUFFIX}\`` : n.bare + LOCAL_SUFFIX}, ${shardingKey(columns)})`
    return [this.apply(edits), distributed]
  }

  createView(): string[] {
    const after = this.skipIf(3, true)
    const n = this.name(after)
    this.noCluster(n.next)
    const name = this.sql.slice(this.tokens[n.from].start, this.tokens[n.next - 1].end)
    const edits = this.renameEdits(n, name, after === 3)
    if (this.word(n.next) !== 'TO') this.fail('a materialized view without TO <table> (its inner table would be neither replicated nor read through a Distributed table)')
    const target = this.name(n.next + 1)
    if (this.tables.replicated.has(target.bare)) {
      edits.push({ start: this.tokens[target.from].start, end: this.tokens[target.next - 1].end, text: this.named(target) })
    }
    const source = this.source(target.next)
    if (source && this.tables.replicated.has(source.bare)) {
      edits.push({ start: this.tokens[source.from].start, end: this.tokens[source.next - 1].end, text: this.named(source) })
    }
    if (this.tokens.some((t) => t.kind === 'word' && t.text.toUpperCase() === 'POPULATE' && t.depth === 0)) this.fail('POPULATE is not rewritten')
    return [this.apply(edits)]
  }

  /**
   * The table a view's SELECT reads first (FROM at the top or in the first subquery), whose inserts trigger the view;
   * a FROM inside a function call (extract(… FROM …), trim(…)) is not one.
   */
  source(from: number): Name | undefined {
    const subquery: boolean[] = []
    for (let i = from; i < this.tokens.length; i++) {
      const t = this.tokens[i]
      if (t.text === '(' && t.kind === 'punct') subquery.push(['SELECT', 'WITH'].includes(this.word(i + 1)))
      else if (t.text === ')' && t.kind === 'punct') subquery.pop()
      else if (this.word(i) === 'FROM' && (subquery.length === 0 || subquery[subquery.length - 1])) {
        if (this.tokens[i + 1]?.text === '(') continue
        return this.name(i + 1)
      }
    }
    return undefined
  }

  insert(): string[] {
    if (this.word(1) !== 'INTO') this.fail('INSERT without INTO')
    const n = this.name(this.word(2) === 'TABLE' ? 3 : 2)
    if (this.word(n.from) === 'FUNCTION') this.fail('INSERT INTO FUNCTION is not rewritten')
    // Once, on the node migrating: a local (Null) table's views write the replicated tables, which copy it to the other replicas.
    if (!this.tables.replicated.has(n.bare)) return [this.sql]
    let i = n.next
    if (this.tokens[i]?.text === '(') i = this.columns(i).next
    const edits: Edit[] = [{ start: this.tokens[n.from].start, end: this.tokens[n.next - 1].end, text: this.named(n) }]
    // A rerun after a failure re-inserts what a TRUNCATE before it emptied: Keeper's block ids must not drop it.
    const at = this.tokens[i]
    if (!at) this.fail('INSERT without rows')
    if (this.word(i) === 'SETTINGS') edits.push({ start: at.end, end: at.end, text: ' insert_deduplicate = 0,' })
    else edits.push({ start: at.start, end: at.start, text: 'SETTINGS insert_deduplicate = 0\n' })
    return [this.apply(edits)]
  }

  /** TRUNCATE, OPTIMIZE, DELETE FROM: on the local table when replicated, ON CLUSTER. */
  onTable(at: number): string[] {
    const n = this.name(this.skipIf(at, false))
    this.noCluster(n.next)
    const name = this.tables.replicated.has(n.bare) ? this.named(n) : this.sql.slice(this.tokens[n.from].start, this.tokens[n.next - 1].end)
    return [this.apply(this.renameEdits(n, name))]
  }

  alter(): string[] {
    if (this.word(1) !== 'TABLE') this.fail('an ALTER of something other than a table')
    const n = this.name(2)
    this.noCluster(n.next)
    // The actions, split at top-level commas.
    const actions: { start: number; end: number; first: number }[] = []
    let first = n.next
    for (let i = n.next; i <= this.tokens.length; i++) {
      const t = this.tokens[i]
      if (!t || (t.depth === 0 && t.text === ',')) {
        if (first < i) actions.push({ start: this.tokens[first].start, end: this.tokens[i - 1].end, first })
        first = i + 1
      }
    }
    const columns = this.tables.replicated.get(n.bare) ?? this.tables.local.get(n.bare)
    // A column added or dropped whatever is there already: an ON CLUSTER run that failed on one node runs again.
    const guards: Edit[] = []
    for (const a of actions) {
      const w = this.word(a.first)
      if ((w === 'ADD' || w === 'DROP') && this.word(a.first + 1) === 'COLUMN' && this.word(a.first + 2) !== 'IF') {
        const at = this.tokens[a.first + 2].start
        guards.push({ start: at, end: at, text: w === 'ADD' ? 'IF NOT EXISTS ' : 'IF EXISTS ' })
      }
    }
    const sql = this.apply(guards)
    if (guards.length > 0) return new Statement(sql, this.cluster, this.tables).alter()
    for (const a of actions) {
      if (this.word(a.first) === 'ADD' && this.word(a.first + 1) === 'COLUMN' && columns) {
        const c = this.name(this.skipIf(a.first + 2, true))
        if (!columns.includes(c.bare)) columns.push(c.bare)
      }
    }
    const name = this.sql.slice(this.tokens[n.from].start, this.tokens[n.next - 1].end)
    if (!this.tables.replicated.has(n.bare)) return [this.apply(this.renameEdits(n, name))]
    const local = this.apply(this.renameEdits(n, this.named(n)))
    // The Distributed table's columns follow the local table's: column changes go to both, the rest (TTL, indexes,
    // settings, mutations) to the local table only.
    const structural = actions.filter((a) => ['ADD', 'DROP', 'MODIFY', 'RENAME', 'COMMENT'].includes(this.word(a.first)) && this.word(a.first + 1) === 'COLUMN')
    if (structural.length === 0) return [local]
    const head = this.sql.slice(0, this.tokens[n.next - 1].end)
    const distributed = `${this.apply(this.renameEdits(n, name), head)} ${structural.map((a) => this.sql.slice(a.start, a.end)).join(', ')}`
    // Dropped from the Distributed table first (a read must not ask the shards for a column gone), added after.
    return structural.every((a) => this.word(a.first) === 'DROP') ? [distributed, local] : [local, distributed]
  }

  drop(): string[] {
    const kind = this.word(1)
    if (!['TABLE', 'VIEW', 'DICTIONARY', 'FUNCTION'].includes(kind)) this.fail('a DROP this rewriting does not know')
    const n = this.name(this.skipIf(2, false))
    this.noCluster(n.next)
    const name = this.sql.slice(this.tokens[n.from].start, this.tokens[n.next - 1].end)
    const plain = this.apply(this.renameEdits(n, name))
    this.tables.local.delete(n.bare)
    if (kind !== 'TABLE' || !this.tables.replicated.has(n.bare)) return [plain]
    this.tables.replicated.delete(n.bare)
    // SYNC: the replica's Keeper entries are gone when it answers, so a table of the same name can be made again.
    const local = this.apply(this.renameEdits(n, this.named(n)))
    return [plain, /\bSYNC\s*$/i.test(local) ? local : `${local} SYNC`]
  }
}
