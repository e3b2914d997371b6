import type { Browser, BrowserContext, Page, Request } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const TOKEN = 'ui-test-token-4f1c'

async function json(response: Response): Promise<Json> {
  return (await response.json()) as Json
}

async function createShellJob(server: TestServer, body: Json, headers: Record<string, string> = {}) {
  const response = await server.request('/api/cron/jobs', { json: { kind: 'shell', ...body }, headers })
  expect(response.status).toBe(200)
  return (await json(response)).job as Json
}

async function screenshot(page: Page, name: string): Promise<void> {
  const path = await screenshotPath(name)
  await page.screenshot({ path, fullPage: true })
  console.log(`screenshot: ${path}`)
}

describe('the dashboard at /ui: assets', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer((config) => ({ ...config, server: { ...config.server, apiToken: TOKEN } }))
  })
  afterAll(async () => {
    await server?.dispose()
  })

  it('serves the page, its module and its style sheet without the token, from this server only', async () => {
    const page = await server.request('/ui')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
    const html = await page.text()
    expect(html).toContain('data-token-required="true"')
    // No CDN: every src and href is on this server (or a fragment, or the empty data: icon).
    const references = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map((match) => match[1])
    expect(references.every((reference) => /^(\/ui\/|#|data:,$)/.test(reference ?? ''))).toBe(true)

    const script = await server.request('/ui/app.js')
    expect(script.status).toBe(200)
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(await script.text()).toContain("fetch('/api/events'")
    const style = await server.request('/ui/style.css')
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8')
    expect((await server.request('/ui/')).status).toBe(200)
    // The data still needs it.
    expect((await server.request('/api/cron/jobs')).status).toBe(401)
    expect((await server.request('/ui/nothing-here')).status).toBe(401)
  })
})

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard in Chromium${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    beforeAll(async () => {
      browser = await launchBrowser()
    })
    afterAll(async () => {
      await browser?.close()
    })

    /** A page that fails the test on any script error. */
    async function openPage(
      options: { width?: number; height?: number } = {},
    ): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
      })
      context.setDefaultTimeout(10_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      return { context, page, errors }
    }

    describe('without a token', () => {
      let server: TestServer
      beforeAll(async () => {
        server = await startTestServer()
      })
      afterAll(async () => {
        await server?.dispose()
      })

      it('lists the cron jobs with their next run, and pauses one from the page', async () => {
        const nightly = await createShellJob(server, {
          name: 'ui-nightly',
          schedule_type: 'cron',
          schedule: '30 2 * * *',
          command: 'echo nightly',
          timezone: 'Europe/Berlin',
          deliver_to: ['webhook'],
        })
        await createShellJob(server, {
          name: 'ui-often',
          schedule_type: 'every',
          schedule: '5m',
          command: 'echo often',
        })
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/cron`)
          const row = page.locator('tr[data-job="ui-nightly"]')
          await expect.poll(() => row.count()).toBe(1)
          expect(await row.locator('.next-run time').getAttribute('datetime')).toBe(nightly.next_run_at)
          const text = await row.textContent()
          expect(text).toContain('cron 30 2 * * *')
          expect(text).toContain('every day at 02:30')
          expect(text).toContain('Europe/Berlin')
          expect(text).toContain('webhook')
          expect(text).toContain('enabled')
          expect(await page.locator('tr[data-job="ui-often"]').textContent()).toContain('every 5 minutes')
          await screenshot(page, 'cron')

          await page.getByRole('button', { name: 'Pause ui-nightly' }).click()
          const paused = await until(async () => {
            const job = (await json(await server.request(`/api/cron/jobs/${nightly.id}`))).job as Json
            return job.enabled === false ? job : undefined
          })
          expect(paused.next_run_at).toBeNull()
          await page.getByRole('button', { name: 'Resume ui-nightly' }).waitFor()
          expect(await row.locator('.state').textContent()).toContain('paused')

          await page.getByRole('button', { name: 'Resume ui-nightly' }).click()
          await until(async () => {
            const job = (await json(await server.request(`/api/cron/jobs/${nightly.id}`))).job as Json
            return job.enabled === true ? job : undefined
          })
          await page.getByRole('button', { name: 'Pause ui-nightly' }).waitFor()
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('runs a job now from its page, and shows runs in its history as they happen', async () => {
        const job = await createShellJob(server, {
          name: 'ui-echo',
          schedule_type: 'cron',
          schedule: '0 9 * * 1-5',
          command: 'echo hello-from-ui',
          timezone: 'UTC',
        })
        const failing = await createShellJob(server, {
          name: 'ui-fails',
          schedule_type: 'every',
          schedule: '1h',
          command: 'echo broken >&2; exit 3',
          deliver_to: ['webhook'],
        })
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/cron/${job.id}`)
          await page.getByRole('heading', { name: 'ui-echo' }).waitFor()
          expect(await page.locator('main').textContent()).toContain('weekdays at 09:00')
          expect(await page.locator('ol.next-runs li').count()).toBe(3)
          await page.getByText('Live updates: on').waitFor()
          await page.getByRole('button', { name: 'Run ui-echo now' }).click()
          const entries = page.locator('ol.timeline li.entry')
          await page.locator('ol.timeline li.entry[data-status="completed"]').first().waitFor()
          expect(await entries.first().textContent()).toContain('completed')
          expect(await entries.first().textContent()).toContain('manual')

          // A run started elsewhere appears too: only the event stream can tell the page.
          const triggered = await server.request(`/api/cron/jobs/${job.id}/trigger`, { method: 'POST' })
          const runId = (await json(triggered)).run_id as string
          await page.locator(`li.entry[data-run="${runId}"][data-status="completed"]`).waitFor()
          expect(await entries.count()).toBe(2)
          await screenshot(page, 'cron-job-history')

          // A failure shows its status and reason as text.
          await page.goto(`${server.url}/ui#/cron/${failing.id}`)
          await page.getByRole('heading', { name: 'ui-fails' }).waitFor()
          await page.getByRole('button', { name: 'Run ui-fails now' }).click()
          const failed = page.locator('li.entry[data-status="failed"]')
          await failed.waitFor()
          expect(await failed.textContent()).toContain('Error: exit code 3')
          // No webhook is configured: the delivery's failure is its own line, in words.
          expect(await failed.locator('p.reason').allTextContents()).toEqual([
            'Error: exit code 3: broken',
            'Delivery failed',
          ])
          await page.getByRole('link', { name: '← All cron jobs' }).click()
          const row = page.locator('tr[data-job="ui-fails"]')
          await row.waitFor()
          expect(await row.locator('.streak').textContent()).toBe('1')
          expect(await row.textContent()).toContain('failed')
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('shows a pending approval as it is asked for, and approves it from the page', async () => {
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/approvals`)
          await page.getByText('Nothing is waiting for approval.').waitFor()
          await page.getByText('Live updates: on').waitFor()
          const asked = await server.request('/api/tools/exec', { json: { command: 'echo approved-in-ui' } })
          expect(asked.status).toBe(202)
          const pending = await json(asked)
          const card = page.locator(`li[data-approval="${pending.approval_id}"]`)
          await card.waitFor()
          expect(await card.textContent()).toContain('Execute: echo approved-in-ui')
          await screenshot(page, 'approvals')

          await card.getByRole('button', { name: 'Approve' }).click()
          const done = await until(async () => {
            const view = await json(await server.request(`/api/approvals/${pending.approval_id}`))
            return view.outcome === null ? undefined : view
          })
          expect(done).toMatchObject({ status: 'approved', outcome: { ok: true, result: { exit_code: 0 } } })
          await page.getByText('Nothing is waiting for approval.').waitFor()
          expect(await page.locator('#announcer').textContent()).toContain(
            'Approved: Execute: echo approved-in-ui',
          )

          // And a denial.
          const second = await json(
            await server.request('/api/tools/exec', { json: { command: 'touch denied-in-ui' } }),
          )
          await page
            .locator(`li[data-approval="${second.approval_id}"]`)
            .getByRole('button', { name: 'Deny' })
            .click()
          await until(async () => {
            const view = await json(await server.request(`/api/approvals/${second.approval_id}`))
            return view.status === 'denied' ? view : undefined
          })
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('follows a workflow run step by step, and cancels it from the page', async () => {
        const yaml = [
          'name: ui-flow',
          'steps:',
          '  - id: first',
          '    run: "echo one"',
          '  - id: nap',
          '    depends_on: [first]',
          '    run: "sleep 30"',
        ].join('\n')
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/workflows`)
          await page.getByRole('heading', { name: 'Workflows' }).waitFor()
          await page.getByText('Live updates: on').waitFor()
          const started = await server.request('/api/workflows/runs', {
            json: { yaml_content: yaml, wait_seconds: 0 },
          })
          expect(started.status).toBe(200)
          const runId = (await json(started)).run_id as string
          // Listed as it starts: only the event stream can tell the page.
          const link = page.locator(`tr[data-run="${runId}"] a`)
          await link.waitFor()
          await link.click()
          await page.getByRole('heading', { name: 'ui-flow' }).waitFor()
          await page.locator('li.step[data-step="nap"][data-status="running"]').waitFor()
          expect(await page.locator('li.step[data-step="first"]').getAttribute('data-status')).toBe(
            'completed',
          )
          expect(await page.locator('li.step[data-step="nap"]').textContent()).toContain('running')
          await screenshot(page, 'workflow-run')

          await page.getByRole('button', { name: 'Cancel run' }).click()
          await until(async () => {
            const run = await json(await server.request(`/api/workflows/runs/${runId}`))
            return run.status === 'cancelled' ? run : undefined
          })
          await page.locator('.run-status [data-status="cancelled"]').waitFor()
          expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('shows the overview, and fits a phone screen', async () => {
        const { context, page, errors } = await openPage({ width: 390, height: 844 })
        try {
          await page.goto(`${server.url}/ui`)
          await page.getByRole('heading', { name: 'Overview' }).waitFor()
          const text = await page.locator('main').textContent()
          expect(text).toContain(server.app.instances.id)
          expect(text).toContain('sqlite')
          expect(text).toContain('failing cron jobs')
          expect(text).toContain('pending approvals')
          expect(text).toContain('running workflows')
          expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Overview')
          await screenshot(page, 'overview-phone')
          const fits = () =>
            page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')
          expect(await fits()).toBe(true)
          // The sections are links the keyboard follows.
          await page.getByRole('link', { name: 'Cron', exact: true }).focus()
          await page.keyboard.press('Enter')
          await page.getByRole('heading', { name: 'Cron' }).waitFor()
          await screenshot(page, 'cron-phone')
          expect(await fits()).toBe(true)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })
    })

    describe('with a token required', () => {
      let server: TestServer
      beforeAll(async () => {
        server = await startTestServer((config) => ({
          ...config,
          server: { ...config.server, apiToken: TOKEN },
        }))
      })
      afterAll(async () => {
        await server?.dispose()
      })

      it('asks for the token before it calls the API, then sends it on every call', async () => {
        await createShellJob(
          server,
          { name: 'ui-guarded', schedule_type: 'every', schedule: '2h', command: 'echo guarded' },
          { authorization: `Bearer ${TOKEN}` },
        )
        const { context, page, errors } = await openPage()
        const apiRequests: Request[] = []
        page.on('request', (request) => {
          if (new URL(request.url()).pathname.startsWith('/api/')) apiRequests.push(request)
        })
        try {
          await page.goto(`${server.url}/ui#/cron`)
          const input = page.getByLabel('API token')
          await input.waitFor()
          await page.waitForLoadState('networkidle')
          expect(apiRequests).toEqual([])
          await screenshot(page, 'token-prompt')

          await input.fill('not-the-token')
          await page.getByRole('button', { name: 'Continue' }).click()
          await page.getByText('The server refused this token.').waitFor()
          expect(await page.evaluate<string | null>("sessionStorage.getItem('lango.apiToken')")).toBeNull()

          const before = apiRequests.length
          await page.getByLabel('API token').fill(TOKEN)
          await page.getByRole('button', { name: 'Continue' }).click()
          await page.locator('tr[data-job="ui-guarded"]').waitFor()
          await page.getByText('Live updates: on').waitFor()
          const sent = apiRequests.slice(before)
          expect(sent.map((request) => new URL(request.url()).pathname)).toEqual(
            expect.arrayContaining(['/api/cron/jobs', '/api/cron/runs', '/api/events']),
          )
          for (const request of sent)
            expect((await request.allHeaders()).authorization).toBe(`Bearer ${TOKEN}`)
          expect(await page.evaluate<string | null>("sessionStorage.getItem('lango.apiToken')")).toBe(TOKEN)
          expect(await page.evaluate<number>('localStorage.length')).toBe(0)

          // Kept for the session: a reload asks nothing.
          await page.reload()
          await page.locator('tr[data-job="ui-guarded"]').waitFor()
          await page.getByRole('button', { name: 'Forget token' }).click()
          await page.getByLabel('API token').waitFor()
          expect(await page.evaluate<string | null>("sessionStorage.getItem('lango.apiToken')")).toBeNull()
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })
    })
  },
)
