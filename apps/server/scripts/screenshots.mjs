// Regenerates the dashboard screenshots of apps/server/README.md: `node scripts/screenshots.mjs` from
// apps/server after a build (`pnpm turbo run build --filter @lango/server`). Needs /usr/bin/chromium.
//
// Starts a built `lango serve` on a temp LANGO_HOME, creates a few jobs through the HTTP API (one of
// them failing so its history shows a reason), runs them, starts a 4-step diamond workflow, and saves
// docs/images/dashboard-cron.png, dashboard-cron-history.png and dashboard-workflow-run.png
// (1200×800, the viewport only).

import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { launchChromium, startServe, stopServe } from '../bench/fixtures/dashboard.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const IMAGES = join(here, '..', '..', '..', 'docs', 'images')

const JOBS = [
  {
    name: 'nightly-backup',
    schedule_type: 'cron',
    schedule: '30 2 * * *',
    timezone: 'Europe/Berlin',
    command: 'echo "backed up /srv/data: 1.2 GiB in 48 s"',
  },
  {
    name: 'disk-usage',
    schedule_type: 'cron',
    schedule: '*/30 * * * *',
    timezone: 'UTC',
    command: 'df -h / | tail -1',
  },
  {
    name: 'tls-expiry-check',
    schedule_type: 'every',
    schedule: '6h',
    timezone: 'UTC',
    command: './check-cert api.example.com',
  },
  {
    name: 'weekly-report',
    schedule_type: 'cron',
    schedule: '0 9 * * 1',
    timezone: 'America/New_York',
    command: 'echo "report: 312 tickets closed, 18 open"',
  },
  {
    name: 'log-rotate',
    schedule_type: 'cron',
    schedule: '0 4 * * 0',
    timezone: 'UTC',
    command: 'echo rotated',
  },
]

/** A stand-in certificate check, in the server's directory: it fails while `renewal-failed` exists there. */
const CHECK_CERT = `#!/bin/sh
if [ -e renewal-failed ]; then echo "$1 expires in 5 days: renewal failed" >&2; exit 2; fi
echo "$1 valid for 84 days"
`

const WORKFLOW = `name: nightly-etl
steps:
  - id: extract
    run: "echo extracted 1204 rows"
  - id: transform-orders
    depends_on: [extract]
    run: "echo orders normalised"
  - id: transform-customers
    depends_on: [extract]
    run: "sleep 120"
  - id: load
    depends_on: [transform-orders, transform-customers]
    run: "echo loaded"
`

/** Polls `check` every 50 ms until it returns something other than undefined (10 s at most). */
async function until(check, what) {
  const deadline = Date.now() + 10_000
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const home = await mkdtemp(join(tmpdir(), 'lango-screenshots-'))
let server
let browser
try {
  await writeFile(join(home, 'check-cert'), CHECK_CERT, { mode: 0o755 })
  server = await startServe({ LANGO_HOME: home }, { cwd: home })
  const api = async (path, json) => {
    const response = await fetch(`${server.url}${path}`, {
      method: json === undefined ? 'GET' : 'POST',
      headers: json === undefined ? {} : { 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    })
    const body = await response.json()
    if (!response.ok) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(body)}`)
    return body
  }
  /** Runs a job now and waits until its run has ended. */
  const runNow = async (job) => {
    const { run_id: runId } = await api(`/api/cron/jobs/${job.id}/trigger`, {})
    await until(async () => {
      const { entries } = await api(`/api/cron/runs?job=${encodeURIComponent(job.id)}&limit=50`)
      const entry = entries.find((candidate) => candidate.id === runId)
      return entry !== undefined && entry.status !== 'running' ? entry : undefined
    }, `run ${runId} of ${job.name}`)
  }

  const jobs = new Map()
  for (const job of JOBS) jobs.set(job.name, (await api('/api/cron/jobs', { kind: 'shell', ...job })).job)
  await runNow(jobs.get('nightly-backup'))
  await runNow(jobs.get('disk-usage'))
  await runNow(jobs.get('weekly-report'))
  // Newest first in its history: failed, completed, failed, completed.
  const tls = jobs.get('tls-expiry-check')
  const failed = join(home, 'renewal-failed')
  await runNow(tls)
  await writeFile(failed, '')
  await runNow(tls)
  await rm(failed)
  await runNow(tls)
  await writeFile(failed, '')
  await runNow(tls)
  await api(`/api/cron/jobs/${jobs.get('log-rotate').id}/pause`, {})

  const { run_id: runId } = await api('/api/workflows/runs', { yaml_content: WORKFLOW, wait_seconds: 0 })
  await until(async () => {
    const run = await api(`/api/workflows/runs/${runId}`)
    const status = (id) => run.steps.find((step) => step.step_id === id)?.status
    return status('transform-orders') === 'completed' && status('transform-customers') === 'running'
      ? run
      : undefined
  }, 'the workflow to reach transform-customers')

  browser = await launchChromium()
  const context = await browser.newContext({
    viewport: { width: 1200, height: 800 },
    locale: 'en-US',
    timezoneId: 'UTC',
  })
  const page = await context.newPage()
  const errors = []
  page.on('pageerror', (error) => errors.push(error.message))
  /** Opens a dashboard route, waits for its heading and the live stream, and saves the viewport. */
  const shoot = async (route, heading, file) => {
    await page.goto(`${server.url}/ui#${route}`)
    await page.getByRole('heading', { name: heading, exact: true }).waitFor()
    await page.getByText('Live updates: on').waitFor()
    // The stream's first connect reloads the view once (250 ms burst): let it settle.
    await page.waitForTimeout(600)
    const path = join(IMAGES, file)
    await page.screenshot({ path, fullPage: false })
    console.log(`saved ${path}`)
  }
  await shoot('/cron', 'Cron', 'dashboard-cron.png')
  await shoot(`/cron/${encodeURIComponent(tls.id)}`, 'tls-expiry-check', 'dashboard-cron-history.png')
  await shoot(`/workflows/${encodeURIComponent(runId)}`, 'nightly-etl', 'dashboard-workflow-run.png')
  if (errors.length > 0) throw new Error(`the dashboard failed: ${errors.join('; ')}`)
} finally {
  await browser?.close()
  if (server !== undefined) await stopServe(server.child)
  await rm(home, { recursive: true, force: true })
}
