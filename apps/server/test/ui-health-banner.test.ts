import { rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ServerConfig } from '../src/config/types.js'
import { silentLogger } from '../src/logger.js'
import { type RunningServer, serve } from '../src/serve.js'
import { chromiumMissing, launchBrowser, openDashboardPage } from './fixtures/browser.js'
import { testConfig, until } from './fixtures/http-server.js'

// The dashboard shows what must not go unnoticed (issue 23 item 5), in a real Chromium: a banner
// on every page while the scheduler is stalled, after it stalled, and while alerts do not get
// through; missed occurrences marked `missed` in a job's history; the scheduler's tick, last stall
// and alerts on the overview.

const LEASE_MS = 60_000

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard's health banner in Chromium${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: RunningServer
    let home: string
    let webhook: Server
    let skewMs = 0

    beforeAll(async () => {
      // The operator's alert webhook refuses everything: alerts fail.
      webhook = createServer((request, response) => {
        request.resume()
        request.on('end', () => response.writeHead(400).end('no'))
      })
      await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve))
      const url = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/hook`
      const made = await testConfig(
        (loaded): ServerConfig => ({
          ...loaded,
          cluster: { ...loaded.cluster, leaseMs: LEASE_MS },
          cron: { ...loaded.cron, minIntervalMs: 1000, maxConsecutiveFailures: 1 },
          channels: { ...loaded.channels, webhook: { ...loaded.channels.webhook, url } },
          alerts: { deliverTo: ['webhook'] },
        }),
      )
      home = made.home
      server = await serve({
        config: made.config,
        logger: silentLogger,
        passphrase: '',
        closeGraceMs: 200,
        localNow: () => Date.now() + skewMs,
      })
      browser = await launchBrowser()
    })
    afterAll(async () => {
      await browser?.close()
      await server?.close()
      await new Promise((resolve) => webhook?.close(resolve))
      if (home !== undefined) await rm(home, { recursive: true, force: true })
    })

    const openDashboard = (hash: string) => openDashboardPage(browser, `${server.url}/ui${hash}`)

    it('shows the stall while the scheduler is stale and after it, marks missed runs, and says alerts fail', async () => {
      await server.app.cron.add({
        name: 'minutely',
        scheduleType: 'cron',
        schedule: '* * * * *',
        command: 'true',
        deliverTo: [],
      })
      const { page, errors } = await openDashboard('#/overview')
      await expect.poll(() => page.locator('h1').textContent()).toBe('Overview')
      expect(await page.locator('#banner').isHidden()).toBe(true)

      // Ten minutes pass on the clock between two ticks: while no tick has come, every page says so.
      const stalledText = await until(async () => {
        skewMs += 10 * 60_000
        await page.reload()
        const item = page.locator('#banner [data-banner="stalled"]')
        return (await item.count()) === 1 ? await item.textContent() : undefined
      })
      expect(stalledText).toMatch(
        /^The scheduler is stalled: it last ticked at .*nothing fires until it ticks again/,
      )
      expect(await page.locator('#banner').getAttribute('role')).toBe('status')

      // The next tick sees the stall (and the scheduler is healthy again): the banner says it
      // happened, the overview shows it.
      await until(
        async () => {
          const response = await fetch(`${server.url}/healthz`)
          const body = (await response.json()) as { scheduler_tick?: { last_stall?: unknown } }
          return response.status === 200 && body.scheduler_tick?.last_stall ? true : undefined
        },
        60_000,
        'the tick after the jump',
      )
      await page.reload()
      const lastStall = page.locator('#banner [data-banner="last-stall"]')
      await expect.poll(() => lastStall.count()).toBe(1)
      expect(await lastStall.textContent()).toMatch(
        /^The scheduler stalled for .* \(the clock jumped forward or the host was suspended\)/,
      )
      await expect
        .poll(async () => (await page.locator('dl.facts').textContent()) ?? '')
        .toMatch(/Last stall.*clock jump/)

      // The job's history marks the occurrences the stall made it miss.
      const job = await server.app.cron.get('minutely')
      await server.app.cron.scheduler.whenIdle()
      await page.goto(`${server.url}/ui#/cron/${encodeURIComponent(job.id)}`)
      const missed = page.locator('li.entry[data-missed="true"]')
      await expect.poll(() => missed.count()).toBeGreaterThan(0)
      expect(await missed.first().locator('.badge').first().textContent()).toBe('missed')
      expect(await missed.first().locator('.reason').first().textContent()).toMatch(
        /^Missed: the scheduler was/,
      )

      // A run's deliveries, one line per target: here the target's channel is not configured.
      await server.app.cron.add({
        name: 'undeliverable',
        scheduleType: 'cron',
        schedule: '0 0 1 1 *',
        command: 'echo report',
        deliverTo: ['slack:C0123ABCD'],
      })
      const triggered = await server.app.cron.trigger('undeliverable')
      await until(async () => {
        const run = await server.app.cron.getRun(triggered.runId as string)
        return run.deliveryStatus === 'failed' ? run : undefined
      }, 60_000)
      const undeliverable = await server.app.cron.get('undeliverable')
      await page.goto(`${server.url}/ui#/cron/${encodeURIComponent(undeliverable.id)}`)
      const target = page.locator(`li.entry[data-run="${triggered.runId}"] li[data-target="slack:C0123ABCD"]`)
      await expect.poll(() => target.count()).toBe(1)
      expect(await target.getAttribute('data-delivery')).toBe('failed')
      expect(await target.textContent()).toMatch(/^slack:C0123ABCD failed .+/)

      // A job that fails is paused (max_consecutive_failures 1): an alert the webhook refuses.
      await server.app.cron.add({
        name: 'breaks',
        scheduleType: 'every',
        schedule: '1s',
        command: 'exit 3',
        deliverTo: [],
      })
      await until(
        async () => (server.app.alerts.status().failing ? true : undefined),
        60_000,
        'alerts failing',
      )
      await page.reload()
      const alerts = page.locator('#banner [data-banner="alerts"]')
      await expect.poll(() => alerts.count()).toBe(1)
      expect(await alerts.textContent()).toContain('Alerts are not getting through to alerts.deliver_to')
      expect(errors).toEqual([])
    })
  },
)
