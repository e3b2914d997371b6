import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DURATION_TABLE } from '@lango/duration/table'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { loadDashboardIntervals } from './fixtures/dashboard-intervals.js'
import { CLI, startLangoServe } from './fixtures/lango-serve.js'

// The dashboard's modules are files that the build copies into dist: this checks the built server, not src.
const TOKEN = 'ui-dist-token-9d2e'
let home: string
let child: ChildProcess | undefined
let url: string

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
  home = await mkdtemp(join(tmpdir(), 'lango-ui-dist-'))
  const started = await startLangoServe(home, { LANGO_API_TOKEN: TOKEN })
  child = started.child
  url = started.url
})
afterAll(async () => {
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }
  await rm(home, { recursive: true, force: true })
})

describe('the dashboard of a built `lango serve`', () => {
  it('serves the page and its assets from dist without the token', async () => {
    for (const [path, type] of [
      ['/ui', 'text/html; charset=utf-8'],
      ['/ui/app.js', 'text/javascript; charset=utf-8'],
      ['/ui/style.css', 'text/css; charset=utf-8'],
    ] as const) {
      const response = await fetch(`${url}${path}`)
      expect(response.status, path).toBe(200)
      expect(response.headers.get('content-type'), path).toBe(type)
      expect((await response.text()).length, path).toBeGreaterThan(500)
    }
    expect((await fetch(`${url}/api/cron/jobs`)).status).toBe(401)
  })

  it('reads intervals in the built script exactly as the server does (ADR 0013)', async () => {
    const { readDuration, describeEvery } = await loadDashboardIntervals(async (path) => {
      const response = await fetch(`${url}${path}`)
      expect(response.status, path).toBe(200)
      return response.text()
    })
    for (const row of DURATION_TABLE) {
      expect(readDuration(row.input), row.input).toEqual(
        'milliseconds' in row
          ? { ok: true, milliseconds: row.milliseconds }
          : { ok: false, problem: row.problem },
      )
    }
    expect(describeEvery('1h30m')).toBe('every 1 hour 30 minutes')
  })

  it.skipIf(chromiumMissing !== undefined)(
    `shows the data once given the token${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
    async () => {
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
      const created = await fetch(`${url}/api/cron/jobs`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          kind: 'shell',
          name: 'dist-job',
          schedule_type: 'cron',
          schedule: '15 6 * * *',
          command: 'echo from-dist',
        }),
      })
      expect(created.status).toBe(200)
      const browser = await launchBrowser()
      try {
        const page = await browser.newPage()
        page.setDefaultTimeout(10_000)
        const errors: string[] = []
        page.on('pageerror', (error) => errors.push(error.message))
        await page.goto(`${url}/ui#/cron`)
        await page.getByLabel('API token').fill(TOKEN)
        await page.getByRole('button', { name: 'Continue' }).click()
        const row = page.locator('tr[data-job="dist-job"]')
        await row.waitFor()
        expect(await row.textContent()).toContain('every day at 06:15')
        await page.getByText('Live updates: on').waitFor()
        const path = await screenshotPath('dist-cron')
        await page.screenshot({ path, fullPage: true })
        console.log(`screenshot: ${path}`)
        expect(errors).toEqual([])
      } finally {
        await browser.close()
      }
    },
  )
})
