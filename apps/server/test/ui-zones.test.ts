import { rm } from 'node:fs/promises'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { chromiumMissing, launchBrowser, openDashboardPage } from './fixtures/browser.js'
import { testConfig } from './fixtures/http-server.js'

// Truth on the page (issue 26), in a real Chromium: every time says its zone, and the header's
// switch (the job's zone, UTC, local) applies to every page and is remembered by the browser.
// The browser runs in New York, so the three modes show three different times.

const BROWSER_ZONE = 'America/New_York'

/** The time of day `iso` is in `zone`, as the page's en-GB formatter writes it (`02:30`). */
function clockIn(iso: string, zone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit' }).format(
    new Date(iso),
  )
}

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard's time zones in Chromium${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: RunningServer
    let home: string

    beforeAll(async () => {
      const made = await testConfig((loaded) => loaded)
      home = made.home
      server = await serve({ config: made.config, logger: silentLogger, passphrase: '', closeGraceMs: 200 })
      browser = await launchBrowser()
    })
    afterAll(async () => {
      await browser?.close()
      await server?.close()
      if (home !== undefined) await rm(home, { recursive: true, force: true })
    })

    const openDashboard = (hash: string) =>
      openDashboardPage(browser, `${server.url}/ui${hash}`, { locale: 'en-GB', timezoneId: BROWSER_ZONE })

    it("labels a Berlin job's next run with its zone; the switch shows UTC, survives a reload, and works by keyboard", async () => {
      await server.app.cron.add({
        name: 'berlin-nightly',
        scheduleType: 'cron',
        schedule: '30 2 * * *',
        timezone: 'Europe/Berlin',
        command: 'true',
        deliverTo: [],
      })
      const job = await server.app.cron.get('berlin-nightly')
      const { page, errors } = await openDashboard(`#/cron/${encodeURIComponent(job.id)}`)
      const next = page.locator('ol.next-runs li time').first()
      await next.waitFor()
      const iso = (await next.getAttribute('datetime')) as string
      expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/)
      expect(clockIn(iso, 'Europe/Berlin')).toBe('02:30')

      // By default a job's times are in its own zone, and say so.
      expect(await next.locator('.zone').textContent()).toBe('Europe/Berlin')
      expect(await next.textContent()).toContain('02:30 Europe/Berlin')

      // The switch: a group with an accessible name, one radio per mode, the job's zone chosen.
      const group = page.getByRole('group', { name: 'Show times in' })
      const jobZone = group.getByRole('radio', { name: "job's zone", exact: true })
      const utc = group.getByRole('radio', { name: 'UTC', exact: true })
      const local = group.getByRole('radio', { name: 'local', exact: true })
      expect(await jobZone.isChecked()).toBe(true)
      expect(await page.evaluate<string | null>("localStorage.getItem('lango.timeZoneMode')")).toBeNull()

      // Keyboard only: the arrow key moves the choice to UTC, and every time on the page follows.
      await jobZone.focus()
      await page.keyboard.press('ArrowRight')
      await expect.poll(() => utc.isChecked()).toBe(true)
      expect(
        await page.evaluate<string | null>('document.activeElement?.getAttribute("value") ?? null'),
      ).toBe('utc')
      const inUtc = `${clockIn(iso, 'UTC')} UTC`
      await expect.poll(() => next.textContent()).toContain(inUtc)
      expect(await next.textContent()).not.toContain('Europe/Berlin')
      expect(await next.getAttribute('datetime')).toBe(iso)
      expect(await page.evaluate<string | null>("localStorage.getItem('lango.timeZoneMode')")).toBe('utc')

      // Remembered by this browser: a reload shows UTC again.
      await page.reload()
      await next.waitFor()
      expect(await next.textContent()).toContain(inUtc)
      expect(await next.locator('.zone').textContent()).toBe('UTC')
      expect(await utc.isChecked()).toBe(true)

      // Local: the browser's zone, labelled `local`; on every page, the job list's too.
      await utc.focus()
      await page.keyboard.press('ArrowRight')
      await expect.poll(() => local.isChecked()).toBe(true)
      await expect.poll(() => next.textContent()).toContain(`${clockIn(iso, BROWSER_ZONE)} local`)
      await page.goto(`${server.url}/ui#/cron`)
      const row = page.locator('tr[data-job="berlin-nightly"] .next-run time')
      await row.waitFor()
      expect(await row.locator('.zone').textContent()).toBe('local')
      expect(await row.textContent()).toContain(`${clockIn(iso, BROWSER_ZONE)} local`)
      expect(await row.getAttribute('datetime')).toBe(iso)
      expect(errors).toEqual([])
    })
  },
)
