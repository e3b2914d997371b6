import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { type SeededJob, seedJobs } from './fixtures/seed-jobs.js'

async function screenshot(page: Page, name: string): Promise<void> {
  const path = await screenshotPath(name)
  await page.screenshot({ path, fullPage: true })
  console.log(`screenshot: ${path}`)
}

/** The names of the job rows on the page, in order. */
function rowNames(page: Page): Promise<string[]> {
  return page
    .locator('table.jobs tbody tr')
    .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-job') ?? ''))
}

/** The `data-key` of the focused element, or its tag when it has none. */
function focusedKey(page: Page): Promise<string> {
  return page.evaluate<string>(
    "document.activeElement?.getAttribute('data-key') ?? document.activeElement?.tagName ?? 'none'",
  )
}

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard as a console: find and fix what broke (issue 26)${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: TestServer
    let seeded: SeededJob[]
    beforeAll(async () => {
      browser = await launchBrowser()
      server = await startTestServer()
      seeded = await seedJobs(server, 60)
    })
    afterAll(async () => {
      await browser?.close()
      await server?.dispose()
    })

    const failingNames = () => seeded.filter((entry) => entry.failing).map((entry) => entry.job.name)

    async function openPage(): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
      context.setDefaultTimeout(10_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      return { context, page, errors }
    }

    it('shows the first page of 60 jobs, then the rest on request', async () => {
      const { context, page, errors } = await openPage()
      try {
        await page.goto(`${server.url}/ui#/cron`)
        await page.getByText('Showing 50 of 60 jobs').waitFor()
        await expect.poll(() => rowNames(page)).toEqual(seeded.slice(0, 50).map((entry) => entry.job.name))
        await page.getByRole('button', { name: 'Show 50 more' }).click()
        await page.getByText('Showing 60 of 60 jobs').waitFor()
        await expect.poll(() => rowNames(page)).toEqual(seeded.map((entry) => entry.job.name))
        // The keyboard goes on at the first new row; nothing more to read, so the button goes.
        expect(await page.evaluate<string | null>('document.activeElement?.textContent')).toBe('job-50')
        expect(await page.getByRole('button', { name: 'Show 50 more' }).isHidden()).toBe(true)
        expect(errors).toEqual([])
      } finally {
        await context.close()
      }
    })

    it('filters to failing jobs from the form and from the URL, and searches by name', async () => {
      const { context, page, errors } = await openPage()
      try {
        await page.goto(`${server.url}/ui#/cron`)
        await page.getByText('Showing 50 of 60 jobs').waitFor()
        await page.getByLabel('Failing').check()
        await page.getByRole('button', { name: 'Apply' }).click()
        await page.getByText(`Showing ${failingNames().length} of ${failingNames().length} jobs`).waitFor()
        expect(new URL(page.url()).hash).toBe('#/cron?failing=1')
        await expect.poll(() => rowNames(page)).toEqual(failingNames())
        await screenshot(page, 'console-failing')

        // The same state from a URL (a link from the overview, a bookmark): the form shows it.
        await page.goto(`${server.url}/ui#/cron?q=JOB-1&paused=0`)
        const expected = seeded
          .filter((entry) => entry.job.name.startsWith('job-1') && !entry.paused)
          .map((entry) => entry.job.name)
        await page.getByText(`Showing ${expected.length} of ${expected.length} jobs`).waitFor()
        await expect.poll(() => rowNames(page)).toEqual(expected)
        expect(await page.getByLabel('Name contains').inputValue()).toBe('JOB-1')
        expect(await page.getByLabel('State').inputValue()).toBe('0')

        // Search by name from the keyboard: type, Enter.
        await page.getByLabel('Name contains').fill('job-0')
        await page.getByLabel('Name contains').press('Enter')
        await until(async () => (new URL(page.url()).hash === '#/cron?q=job-0&paused=0' ? true : undefined))
        const zeros = seeded
          .filter((entry) => entry.job.name.startsWith('job-0') && !entry.paused)
          .map((entry) => entry.job.name)
        await page.getByText(`Showing ${zeros.length} of ${zeros.length} jobs`).waitFor()
        await expect.poll(() => rowNames(page)).toEqual(zeros)
        expect(errors).toEqual([])
      } finally {
        await context.close()
      }
    })

    it('pauses a job from the filtered list by keyboard: focus stays on its control; a live update moves no focus', async () => {
      const { context, page, errors } = await openPage()
      try {
        await page.goto(`${server.url}/ui#/cron?failing=1`)
        await page.getByText('Live updates: on').waitFor()
        const target = seeded.find((entry) => entry.failing && !entry.paused) as SeededJob
        const other = seeded.find((entry) => entry.failing && !entry.paused && entry !== target) as SeededJob
        const pause = page.getByRole('button', { name: `Pause ${target.job.name}`, exact: true })
        // Visible text first in the accessible name (WCAG 2.5.3): "Run now <name>".
        await page.getByRole('button', { name: `Run now ${target.job.name}`, exact: true }).waitFor()
        await pause.focus()
        await page.keyboard.press('Enter')
        await page.getByRole('button', { name: `Resume ${target.job.name}`, exact: true }).waitFor()
        await until(async () => ((await focusedKey(page)) === `toggle:${target.job.id}` ? true : undefined))
        const stored = (await (await server.request(`/api/cron/jobs/${target.job.id}`)).json()) as {
          job: { enabled: boolean }
        }
        expect(stored.job.enabled).toBe(false)
        await expect.poll(() => rowNames(page)).toEqual(failingNames())

        // Another job paused elsewhere: its row changes, the focus stays where it was.
        await server.request(`/api/cron/jobs/${other.job.id}/pause`, { method: 'POST' })
        await page.getByRole('button', { name: `Resume ${other.job.name}`, exact: true }).waitFor()
        expect(await focusedKey(page)).toBe(`toggle:${target.job.id}`)
        // Resume by keyboard again: focus returns to the same control, now "Pause".
        await page.keyboard.press('Enter')
        await pause.waitFor()
        await until(async () => ((await focusedKey(page)) === `toggle:${target.job.id}` ? true : undefined))
        expect(errors).toEqual([])
      } finally {
        await context.close()
      }
    })

    it('names the failing jobs on the overview, each linked to its page', async () => {
      const { context, page, errors } = await openPage()
      try {
        // Resuming a job resets its failures (the test above resumed one): ask the server which fail now.
        const listed = (await (await server.request('/api/cron/jobs?failing=1&sort=failures')).json()) as {
          jobs: { name: string }[]
        }
        const names = listed.jobs.map((job) => job.name)
        expect(names.length).toBeGreaterThan(3)
        await page.goto(`${server.url}/ui#/overview`)
        const failing = page.locator('[data-trouble="Failing jobs"]')
        await failing.waitFor()
        expect(await failing.getByRole('link').allTextContents()).toEqual(names)
        const deliveries = page.locator('[data-trouble="Last delivery failed"]')
        expect(await deliveries.getByRole('link').allTextContents()).toEqual(
          seeded.filter((entry) => entry.deliveryFailed).map((entry) => entry.job.name),
        )
        await screenshot(page, 'console-overview')
        const first = names[0] as string
        await failing.getByRole('link', { name: first, exact: true }).click()
        await page.getByRole('heading', { name: first, exact: true }).waitFor()
        expect(new URL(page.url()).hash).toBe(
          `#/cron/${seeded.find((entry) => entry.job.name === first)?.job.id}`,
        )
        expect(errors).toEqual([])
      } finally {
        await context.close()
      }
    })
  },
)
