// Finds Debian's chromium for the browser tests and starts it through playwright-core. Where there is
// none, the tests are skipped with "skipped: no chromium" outside CI and fail in CI (CI=true), where
// .ci/run installs it.
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].filter(Boolean) as string[]

const chromiumPath: string | undefined = CANDIDATES.find((p) => existsSync(p))

/** True when the tests must run: chromium is here, or this is CI (where its absence is a failure). */
export const browserTestsRun = Boolean(chromiumPath) || process.env.CI === 'true'

if (!chromiumPath && !browserTestsRun) console.log('console browser tests: skipped: no chromium (apt-get install chromium, or set CHROMIUM_PATH)')

export async function launch(): Promise<Browser> {
  if (!chromiumPath) throw new Error('no chromium: CI installs it in .ci/run (apt-get install chromium); set CHROMIUM_PATH to use another')
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
}

/** A new browser context signed in with `key` at the console's home; page errors are pushed to `problems`. */
export async function signIn(browser: Browser, baseUrl: string, key: string, problems: string[]): Promise<Page> {
  const page = await (await browser.newContext()).newPage()
  page.on('pageerror', (e) => problems.push(e.message))
  await page.goto(`${baseUrl}/`)
  await page.fill('input[name=key]', key)
  await page.click('button[type=submit]')
  await page.waitForSelector('aside.side')
  return page
}
