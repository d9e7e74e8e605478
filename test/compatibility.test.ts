// docs/compatibility.md cannot drift from the code: its requests, "reaches a route" column and counts are what
// scripts/compatibility.ts computes from @flexprice/sdk's operations, the routes and the SDK suite (test/sdk), and no
// row's status contradicts them.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { compatibilityPage, servedRoutes } from '../scripts/compatibility.ts'

const page = readFileSync(join(import.meta.dirname, '../docs/compatibility.md'), 'utf8')

describe('docs/compatibility.md', () => {
  it('is what `npm run compat` writes from the SDK and the routes', () => {
    expect(compatibilityPage(page) === page, 'docs/compatibility.md is out of date: run `npm run compat` and commit the result').toBe(true)
  })

  it('has one row for each of the SDK 2.0.1 operations, counted per status', () => {
    const rows = page.split('\n').filter((l) => l.startsWith('| `'))
    expect(rows).toHaveLength(188)
    expect(new Set(rows.map((l) => l.split(' | ')[0])).size).toBe(188)
    expect(page).toContain('| **all** | **188** |')
  })

  it('refuses "not yet" on a method that reaches a route', () => {
    const stale = page.replace(/(\| `getCustomer` \| `GET \/v1\/customers\/\{id\}` \| yes \| [^|]+ \| )supported/, '$1not yet')
    expect(stale).not.toBe(page)
    expect(() => compatibilityPage(stale)).toThrow(/getCustomer \(GET \/v1\/customers\/\{id\}\) reaches a route but says "not yet"/)
  })

  it('refuses supported on a method that reaches no route', () => {
    const withoutIt = servedRoutes().filter((r) => !(r.method === 'GET' && r.path === '/v1/customers/{id}'))
    expect(() => compatibilityPage(page, withoutIt)).toThrow(/getCustomer \(GET \/v1\/customers\/\{id\}\) reaches no route but says "supported"/)
  })

  it("counts a round trip only for a method that works and that the SDK suite calls", () => {
    const summary = /Round trips through the SDK \(supported or differs, and called by the suite\): \*\*(\d+) of 188/.exec(page)
    const rows = page.split('\n').filter((l) => /^\| `\w+` \| `[^`]+` \| (yes|no) \| (?!no \|)[\w, -]+ \| (supported|\*\*differs\*\*) \|/.test(l))
    expect(Number(summary?.[1])).toBe(rows.length)
  })

  it('refuses a row for a method the SDK does not have, and a method with two rows', () => {
    const row = page.split('\n').find((l) => l.startsWith('| `getCustomer` |'))!
    expect(() => compatibilityPage(page.replace(row, `${row}\n${row.replace('getCustomer', 'getCustomerV9')}`))).toThrow(/methods @flexprice\/sdk does not have: getCustomerV9/)
    expect(() => compatibilityPage(page.replace(row, `${row}\n${row}`))).toThrow(/getCustomer has two rows/)
  })

  it('refuses a fixed path shadowed by a record\'s {id} mounted before it (the router takes the first match)', () => {
    const shadowing = [{ method: 'GET' as const, path: '/v1/prices/{id}' }, ...servedRoutes()]
    expect(() => compatibilityPage(page, shadowing)).toThrow(/listPriceUnits \(GET \/v1\/prices\/units\): GET \/v1\/prices\/\{id\} is mounted before \/v1\/prices\/units/)
  })
})
