import { defineConfig } from 'vitest/config'

// chDB binds one data directory per process, so every test file runs in its own forked process.
export default defineConfig({
  test: {
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    include: ['core/**/*.test.ts', 'infra/**/*.test.ts', 'domains/**/*.test.ts', 'http/**/*.test.ts', 'ingest/**/*.test.ts', 'aggregator/**/*.test.ts', 'worker/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
})
