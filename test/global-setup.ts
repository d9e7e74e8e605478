// PGlite's first start runs initdb (several seconds). Do it once per run into a template that each
// test's embedded store is copied from, so a test file pays a copy, not an initdb.
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const manifest = new URL('../node_modules/@electric-sql/pglite/package.json', import.meta.url)
const version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version
export const PGLITE_TEMPLATE = join(tmpdir(), `meterbill-pglite-template-${version}`)

export default async function setup(): Promise<void> {
  if (existsSync(PGLITE_TEMPLATE)) return
  const { PGlite } = await import('@electric-sql/pglite')
  const building = mkdtempSync(join(tmpdir(), 'meterbill-pglite-building-'))
  const db = await PGlite.create(building)
  await db.close()
  try {
    renameSync(building, PGLITE_TEMPLATE)
  } catch {
    rmSync(building, { recursive: true, force: true }) // another run made it first
  }
}

export function seedEmbeddedPostgres(dataDir: string): void {
  if (existsSync(PGLITE_TEMPLATE)) cpSync(PGLITE_TEMPLATE, join(dataDir, 'postgres'), { recursive: true })
}
