/**
 * The dashboard at 10,000 jobs (issue 26): seeded straight through the store, as the bench does,
 * the cron page filtered to failing jobs shows its first page (paged on the server, so the page
 * holds 50 rows, not 10,000), and a job is paused from it by keyboard: its row shows Resume, the
 * focus stays on that control, and the server has the job paused. Real Chromium, real server.
 */
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, openDashboardPage } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { type SeededJob, seedJobs } from './fixtures/seed-jobs.js'

const JOBS = 10_000

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard at ${JOBS} jobs${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: TestServer
    let seeded: SeededJob[]
    beforeAll(async () => {
      browser = await launchBrowser()
      server = await startTestServer()
      seeded = await seedJobs(server, JOBS, 'big')
    }, 120_000)
    afterAll(async () => {
      await browser?.close()
      await server?.dispose()
    })

    it('filters to the failing jobs and pauses one from the page by keyboard', async () => {
      const failing = seeded.filter((entry) => entry.failing)
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron?failing=1`)
      try {
        await page
          .getByText(`Showing 50 of ${failing.length.toLocaleString('en-US')} jobs`)
          .waitFor({ timeout: 30_000 })
        await page.getByText('Live updates: on').waitFor()
        expect(await page.locator('table.jobs tbody tr').count()).toBe(50)
        // Paged on the server: the page holds what 50 rows need, not what 10,000 would.
        expect(await page.evaluate<number>("document.getElementsByTagName('*').length")).toBeLessThan(5_000)

        const row = page
          .locator('table.jobs tbody tr')
          .filter({ has: page.getByRole('button', { name: /^Pause / }) })
        const name = (await row.first().getAttribute('data-job')) as string
        const target = seeded.find((entry) => entry.job.name === name) as SeededJob
        expect(target.failing && !target.paused).toBe(true)
        await page.getByRole('button', { name: `Pause ${name}`, exact: true }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('button', { name: `Resume ${name}`, exact: true }).waitFor()
        expect(await page.evaluate<string | null>("document.activeElement?.getAttribute('data-key')")).toBe(
          `toggle:${target.job.id}`,
        )
        const paused = await until(async () => {
          const response = await server.request(`/api/cron/jobs/${encodeURIComponent(target.job.id)}`)
          const { job } = (await response.json()) as { job: { enabled: boolean } }
          return job.enabled === false ? job : undefined
        })
        expect(paused.enabled).toBe(false)
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })
  },
)
