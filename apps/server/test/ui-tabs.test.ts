/**
 * One event stream per browser (issue 26): the dashboard's tabs share one `GET /api/events` stream
 * (Web Locks elect the tab that reads it, a BroadcastChannel carries its events to the others), so
 * a seventh tab is as live as the first (a browser allows six connections per host) and the server
 * holds one subscriber per browser, not one per tab. Real Chromium, real server on loopback.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

const TABS = 7

describe.skipIf(chromiumMissing !== undefined)(
  `seven dashboard tabs share one event stream${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: TestServer
    beforeAll(async () => {
      browser = await launchBrowser()
      server = await startTestServer()
    })
    afterAll(async () => {
      await browser?.close()
      await server?.dispose()
    })

    async function addJob(name: string): Promise<void> {
      const response = await server.request('/api/cron/jobs', {
        json: { kind: 'shell', name, schedule_type: 'cron', schedule: '0 3 * * *', command: 'true' },
      })
      expect(response.ok).toBe(true)
    }

    const subscribers = () => server.app.events.subscriberCount

    it('every tab is live; a new job shows in all of them; closing the reading tab hands the stream on', async () => {
      const context: BrowserContext = await browser.newContext({ viewport: { width: 1024, height: 700 } })
      context.setDefaultTimeout(20_000)
      const errors: string[] = []
      try {
        const pages: Page[] = []
        for (let index = 0; index < TABS; index += 1) {
          const page = await context.newPage()
          page.on('pageerror', (error) => errors.push(error.message))
          await page.goto(`${server.url}/ui#/cron`)
          await page.getByText('Live updates: on').waitFor()
          pages.push(page)
        }
        // The first tab reads the stream; the six others hear it from there.
        await until(async () => (subscribers() === 1 ? true : undefined), 15_000, 'one subscriber')
        for (const page of pages.slice(1))
          await page.getByText('Live updates: on (shared with another tab)').waitFor()

        await addJob('seen-by-all')
        for (const page of pages) await page.locator('tr[data-job="seen-by-all"]').waitFor()

        // The reading tab goes: another takes the stream over, and every tab left stays live.
        await (pages.shift() as Page).close()
        await addJob('after-handover')
        for (const page of pages) await page.locator('tr[data-job="after-handover"]').waitFor()
        await until(async () => (subscribers() === 1 ? true : undefined), 15_000, 'one subscriber again')
        expect(errors).toEqual([])
      } finally {
        await context.close()
      }
      await until(async () => (subscribers() === 0 ? true : undefined), 15_000, 'no subscriber once closed')
    })
  },
)
