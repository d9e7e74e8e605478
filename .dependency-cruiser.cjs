// The layers of docs/architecture.md, checked by test/architecture.test.ts on every `npm test`:
// core → infra → domains (in the order below) → http, with ingest/, aggregator/, worker/ and cli.ts as
// entry points that use domains but never http/.

/** Domains, lowest first: each may import the ones before it, never one after it. */
const DOMAINS = [
  'records', 'tenancy', 'catalog', 'customers', 'subscriptions', 'usage', 'invoicing', 'credits', 'analytics',
  ['integrations', 'webhooks', 'cloning', 'accounting', 'exports', 'costs', 'communications', 'portal'],
  ['tasks', 'dunning'],
  'clocks',
]

const tiers = DOMAINS.map((t) => (Array.isArray(t) ? t : [t]))
const alt = (names) => `(${names.join('|')})`

// Tests and benches drive the whole program; their imports are not layers.
const PRODUCTION = { pathNot: ['\\.test\\.ts$', '^test/', '^bench/'] }

const upward = tiers.slice(0, -1).map((tier, i) => ({
  name: `domain-order-${tier.join('-')}`,
  comment: `domains/${tier.join(', ')} may not import a domain above it (${tiers.slice(i + 1).flat().join(', ')}): register a guard or move the operation up`,
  severity: 'error',
  from: { path: `^domains/${alt(tier)}/`, ...PRODUCTION },
  to: { path: `^domains/${alt(tiers.slice(i + 1).flat())}/` },
}))

const siblings = tiers
  .filter((tier) => tier.length > 1)
  .map((tier) => ({
    name: `domain-siblings-${tier.join('-')}`,
    comment: `${tier.join(' and ')} stand side by side: neither imports the other`,
    severity: 'error',
    from: { path: `^domains/(${alt(tier)})/`, ...PRODUCTION },
    to: { path: `^domains/${alt(tier)}/`, pathNot: '^domains/$1/' },
  }))

/** A floor imports nothing above it: the floors over it and the program's top (bench and tests drive it all). */
const ABOVE = ['infra', 'domains', 'http', 'ingest', 'aggregator', 'worker', 'bench', 'test']
const floors = [
  ['core-is-pure', 'core', 'core/ is pure calculation: it imports nothing of the layers above it'],
  ['infra-below-domains', 'infra', 'infra/ holds the engines: it imports core/ and infra/ only'],
  ['domains-below-entry-points', 'domains', 'domains/ use core/, infra/ and lower domains; never http/ or an entry point'],
].map(([name, floor, comment]) => ({
  name,
  comment,
  severity: 'error',
  from: { path: `^${floor}/`, ...PRODUCTION },
  to: { path: `^${alt(ABOVE.slice(ABOVE.indexOf(floor) + 1))}/|^(cli|roles)\\.ts$` },
}))

const IO = ['node:fs', 'fs', 'node:net', 'net', 'node:http', 'http', 'node:https', 'https', 'node:child_process', 'child_process', 'node:worker_threads', 'worker_threads', 'node:dgram', 'node:dns', 'node:tls', 'postgres', 'kafkajs', 'chdb', '@clickhouse/client', 'koa', '@koa/router', '@koa/bodyparser', 'pino', 'node-cron', '@electric-sql/pglite', '@electric-sql/pglite-socket', 'pdfkit']

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'an import cycle: no module of it can be read, tested or changed alone',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...floors,
    {
      name: 'core-no-io',
      comment: 'core/ does no I/O: no engine, network, file system or thread module',
      severity: 'error',
      from: { path: '^core/', ...PRODUCTION },
      to: { dependencyTypes: ['core', 'npm'], path: `^(${IO.map((m) => m.replace(/[./]/g, '\\$&')).join('|')})$` },
    },
    {
      name: 'only-the-top-imports-http',
      comment: 'http/ speaks HTTP: only the program (roles.ts) serves it; entry points use domains, never http/',
      severity: 'error',
      from: { path: '^(core|infra|domains|ingest|aggregator|worker)/|^cli\\.ts$', ...PRODUCTION },
      to: { path: '^http/' },
    },
    ...upward,
    ...siblings,
    {
      name: 'no-orphans',
      comment: 'a file nothing imports (and that is no entry point) is dead code',
      severity: 'error',
      from: { orphan: true, pathNot: ['\\.test\\.ts$', '^test/', '^bench/', '^scripts/', '\\.d\\.ts$', '(^|/)\\.[^/]+\\.(c|m)?js$', '^cli\\.ts$', '^bin/', '\\.config\\.ts$', '-thread\\.mjs$'] },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|data|\\.services)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
}
