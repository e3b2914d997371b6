import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, openDashboardPage, screenshotPath } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

/** The focused element's `attribute` (null when it has none). */
function focused(page: Page, attribute: string): Promise<string | null> {
  return page.evaluate<string | null>(
    `document.activeElement?.getAttribute(${JSON.stringify(attribute)}) ?? null`,
  )
}

/** The focused element's text. */
function focusedText(page: Page): Promise<string | null> {
  return page.evaluate<string | null>('document.activeElement?.textContent ?? null')
}

/** Waits until the announcer says something starting with `prefix`; returns it. */
function announced(page: Page, prefix: string): Promise<string> {
  return until(async () => {
    const text = (await page.locator('#announcer').textContent()) ?? ''
    return text.startsWith(prefix) ? text : undefined
  })
}

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard as operator's console in Chromium (issue 26)${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
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

    const json = async (path: string, init?: { method?: string; json?: unknown }) => {
      const response = await server.request(path, init)
      return { status: response.status, body: (await response.json()) as Json }
    }

    it('creates a cron job by keyboard with a live, zone-labelled preview, and shows the server refusal', async () => {
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron`)
      try {
        const newJob = page.getByRole('link', { name: 'New cron job' })
        await newJob.focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'New cron job' }).waitFor()

        // Kind: the radio group by arrow key (ai → shell).
        await page.getByRole('radio', { name: /^ai/ }).focus()
        await page.keyboard.press('ArrowDown')
        expect(await page.getByRole('radio', { name: /^shell/ }).isChecked()).toBe(true)
        await page.getByLabel('Command', { exact: true }).waitFor()

        await page.getByLabel('Name', { exact: true }).focus()
        await page.keyboard.type('ui-nightly-backup')
        const schedule = page.getByLabel('Schedule', { exact: true })
        await schedule.focus()
        await page.keyboard.type('nope')
        const status = page.locator('.preview-status')
        // Generous deadlines: the preview is a debounced round trip, slow on a loaded machine.
        await until(
          async () => ((await status.textContent())?.startsWith('No preview:') ? true : undefined),
          60_000,
          'the refused preview',
        )
        // Live preview updates never take the focus.
        expect(await focused(page, 'id')).toBe('job-schedule')
        await schedule.fill('')
        await schedule.focus()
        await page.keyboard.type('0 3 * * *')
        await page.getByLabel('Time zone', { exact: true }).focus()
        await page.keyboard.type('Asia/Tokyo')
        await until(
          async () => ((await status.getAttribute('data-zone')) === 'Asia/Tokyo' ? true : undefined),
          60_000,
          'the Asia/Tokyo preview',
        )
        expect(await status.textContent()).toContain('Times in Asia/Tokyo')
        const fires = page.locator('.next-runs li')
        expect(await fires.count()).toBe(5)
        // In the job's zone (the header's default mode), each time names it.
        expect(await fires.first().textContent()).toContain('Asia/Tokyo')
        expect(await fires.first().locator('time').getAttribute('datetime')).toMatch(/T18:00:00\.000Z$/)
        expect(await focused(page, 'id')).toBe('job-timezone')
        await page.screenshot({ path: await screenshotPath('cron-new-preview'), fullPage: true })

        // No command: the server refuses; the refusal is shown above the fields and takes the focus.
        await page.keyboard.press('Enter')
        const error = page.locator('#job-form-error')
        await error.waitFor()
        expect(await focused(page, 'id')).toBe('job-form-error')
        expect(await error.textContent()).toContain('command')
        expect((await json('/api/cron/jobs/ui-nightly-backup')).status).toBe(404)

        await page.getByLabel('Command', { exact: true }).focus()
        await page.keyboard.type('echo backed-up')
        await page.keyboard.press('Tab')
        expect(await focused(page, 'id')).toBe('job-deliver-to')
        await page.getByRole('button', { name: 'Create job' }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'ui-nightly-backup' }).waitFor()
        expect(await announced(page, 'Created')).toBe('Created ui-nightly-backup')
        const stored = (await json('/api/cron/jobs/ui-nightly-backup')).body.job
        expect(stored).toMatchObject({
          kind: 'shell',
          schedule_type: 'cron',
          schedule: '0 3 * * *',
          timezone: 'Asia/Tokyo',
          command: 'echo backed-up',
        })
        expect(page.url()).toContain(`#/cron/${stored.id}`)

        // A taken name is refused before anything is stored (POST would update that job).
        await page.goto(`${server.url}/ui#/cron/new`)
        await page.getByLabel('Name', { exact: true }).fill('ui-nightly-backup')
        await page.getByLabel('Schedule', { exact: true }).fill('0 5 * * *')
        await page.getByLabel('Prompt', { exact: true }).fill('say hi')
        await page.getByRole('button', { name: 'Create job' }).focus()
        await page.keyboard.press('Enter')
        await until(async () => ((await focused(page, 'id')) === 'job-form-error' ? true : undefined))
        expect(await error.textContent()).toContain('already exists')
        expect(await page.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBe('true')
        expect((await json('/api/cron/jobs/ui-nightly-backup')).body.job.schedule).toBe('0 3 * * *')
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('edits a job by keyboard: the refusal takes the focus, a save returns it to Edit', async () => {
      const created = await json('/api/cron/jobs', {
        json: {
          kind: 'shell',
          name: 'ui-edit-me',
          schedule_type: 'every',
          schedule: '2h',
          command: 'echo a',
        },
      })
      const id = created.body.job.id as string
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron/${id}`)
      try {
        await page.getByRole('heading', { name: 'ui-edit-me' }).waitFor()
        const edit = page.getByRole('link', { name: 'Edit ui-edit-me' })
        await edit.focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'Edit ui-edit-me' }).waitFor()
        // The preview of the stored schedule is drawn at once.
        await until(async () => ((await page.locator('.next-runs li').count()) === 5 ? true : undefined))

        const zone = page.getByLabel('Time zone', { exact: true })
        await zone.fill('Mars/Olympus')
        await zone.focus()
        await page.keyboard.press('Enter')
        await until(async () => ((await focused(page, 'id')) === 'job-form-error' ? true : undefined))
        expect(await page.locator('#job-form-error').textContent()).toMatch(/Not saved: .*Mars\/Olympus/)
        expect(await zone.getAttribute('aria-invalid')).toBe('true')
        expect((await json(`/api/cron/jobs/${id}`)).body.job.timezone).not.toBe('Mars/Olympus')

        await zone.fill('Europe/Berlin')
        const scheduleType = page.getByLabel('Schedule type', { exact: true })
        await scheduleType.selectOption('cron')
        await page.getByLabel('Schedule', { exact: true }).fill('15 6 * * 1-5')
        await page.getByLabel('Command', { exact: true }).fill('echo b')
        await page.getByRole('button', { name: 'Save changes' }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'ui-edit-me' }).waitFor()
        await until(async () => ((await focused(page, 'data-key')) === `edit:${id}` ? true : undefined))
        expect(await announced(page, 'Saved')).toBe('Saved ui-edit-me')
        expect((await json(`/api/cron/jobs/${id}`)).body.job).toMatchObject({
          schedule_type: 'cron',
          schedule: '15 6 * * 1-5',
          timezone: 'Europe/Berlin',
          command: 'echo b',
        })
        await page.screenshot({ path: await screenshotPath('cron-edited'), fullPage: true })
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('makes a job a webhook job in the Edit form, and saves a webhook job again: its schedule is its hook name', async () => {
      const created = await json('/api/cron/jobs', {
        json: { kind: 'shell', name: 'ui-hooked', schedule_type: 'every', schedule: '2h', command: 'echo a' },
      })
      const id = created.body.job.id as string
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron/${id}/edit`)
      try {
        await page.getByRole('heading', { name: 'Edit ui-hooked' }).waitFor()
        const scheduleType = page.getByLabel('Schedule type', { exact: true })
        const schedule = page.getByLabel('Schedule', { exact: true })
        const status = page.locator('.preview-status')
        await scheduleType.selectOption('webhook')
        // The hint says what the schedule of a webhook job is.
        expect(await page.locator('#job-schedule-hint').textContent()).toMatch(
          /^A hook name .*POST \/hooks\/<name>, signed with the vault secret webhook\.<name>/,
        )
        expect(await schedule.getAttribute('aria-describedby')).toContain('job-schedule-hint')
        await schedule.fill('ui-push')
        await until(
          async () => ((await status.textContent())?.includes('POST /hooks/ui-push') ? true : undefined),
          60_000,
          'the webhook preview',
        )
        expect(await status.textContent()).toBe(
          'Runs on webhook ui-push: each signed POST /hooks/ui-push starts a run.',
        )
        expect(await page.locator('.next-runs li').count()).toBe(0)
        await page.getByRole('button', { name: 'Save changes' }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'ui-hooked' }).waitFor()
        expect(await announced(page, 'Saved')).toBe('Saved ui-hooked')
        expect((await json(`/api/cron/jobs/${id}`)).body.job).toMatchObject({
          schedule_type: 'webhook',
          schedule: 'ui-push',
          next_run_at: null,
        })

        // Edit it again: the form shows it as a webhook job and saves a change of its command.
        await page.goto(`${server.url}/ui#/cron/${id}/edit`)
        await page.getByRole('heading', { name: 'Edit ui-hooked' }).waitFor()
        expect(await scheduleType.inputValue()).toBe('webhook')
        expect(await schedule.inputValue()).toBe('ui-push')
        await page.getByLabel('Command', { exact: true }).fill('echo b')
        await schedule.fill('ui-push-2')
        await page.getByRole('button', { name: 'Save changes' }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'ui-hooked' }).waitFor()
        expect(await announced(page, 'Saved')).toBe('Saved ui-hooked')
        expect((await json(`/api/cron/jobs/${id}`)).body.job).toMatchObject({
          schedule_type: 'webhook',
          schedule: 'ui-push-2',
          command: 'echo b',
        })
        await page.screenshot({ path: await screenshotPath('cron-webhook-edited'), fullPage: true })
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('keeps what was typed in the job form when the event stream resets (the form is drawn once per visit)', async () => {
      // The first tab holds the event stream; the second hears its events over a BroadcastChannel,
      // where this test can speak too.
      const { page: leader, errors } = await openDashboardPage(browser, `${server.url}/ui#/overview`)
      await until(async () =>
        (await leader.locator('#live').getAttribute('data-state')) === 'on' ? true : undefined,
      )
      const page = await leader.context().newPage()
      page.on('pageerror', (error) => errors.push(error.message))
      /** What the stream's tab tells the others after a reconnect the server could not replay. */
      const tell = (type: string) =>
        page.evaluate(`(() => {
          const channel = new BroadcastChannel('lango-events')
          channel.postMessage({ kind: 'event', type: ${JSON.stringify(type)}, data: { reason: 'test' } })
          channel.close()
        })()`)
      try {
        await page.goto(`${server.url}/ui#/cron/new`)
        const name = page.getByLabel('Name', { exact: true })
        await name.fill('ui-typed-not-lost')
        await page.evaluate('window.__formBefore = document.querySelector("form.job-form")')
        // `reset` (read the page again) and a cron event: neither may redraw the form.
        await tell('reset')
        await tell('cron.job.updated')
        // A refresh would come 250 ms after the event; give it ample time to (wrongly) happen.
        await page.waitForTimeout(1500)
        expect(await page.evaluate('window.__formBefore === document.querySelector("form.job-form")')).toBe(
          true,
        )
        expect(await name.inputValue()).toBe('ui-typed-not-lost')
        // The control: another view is read again on `reset`.
        await page.goto(`${server.url}/ui#/cron`)
        await page.getByRole('heading', { name: 'Cron', exact: true }).waitFor()
        await page.evaluate('window.__listBefore = document.querySelector("#main > *")')
        await tell('reset')
        await until(async () =>
          (await page.evaluate('window.__listBefore !== document.querySelector("#main > *")'))
            ? true
            : undefined,
        )
        expect(errors).toEqual([])
      } finally {
        await leader.context().close()
      }
    })

    it('sets the timeout, overlap, notify policy and ping URL from the form, and removes the ping URL again', async () => {
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron/new`)
      try {
        await page.getByLabel('Name', { exact: true }).fill('ui-run-settings')
        await page.getByLabel('Schedule', { exact: true }).fill('0 4 * * *')
        await page.getByLabel('Prompt', { exact: true }).fill('check the disks')
        await page.getByLabel('Timeout', { exact: true }).fill('90s')
        await page.getByLabel('Overlap', { exact: true }).selectOption('queue_one')
        await page.getByLabel('Notify', { exact: true }).selectOption('failure')
        await page.getByLabel('Ping URL', { exact: true }).fill('https://hc-ping.example/abc')
        await page.getByRole('button', { name: 'Create job' }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('heading', { name: 'ui-run-settings' }).waitFor()
        const id = (await json('/api/cron/jobs/ui-run-settings')).body.job.id as string
        expect((await json(`/api/cron/jobs/${id}`)).body.job).toMatchObject({
          timeout_ms: 90_000,
          overlap: 'queue_one',
          notify: 'failure',
          ping_url: 'https://hc-ping.example/abc',
        })

        await page.goto(`${server.url}/ui#/cron/${id}/edit`)
        await page.getByRole('heading', { name: 'Edit ui-run-settings' }).waitFor()
        // The stored values are shown as they were given.
        expect(await page.getByLabel('Timeout', { exact: true }).inputValue()).toBe('90s')
        expect(await page.getByLabel('Overlap', { exact: true }).inputValue()).toBe('queue_one')
        expect(await page.getByLabel('Notify', { exact: true }).inputValue()).toBe('failure')
        await page.getByLabel('Timeout', { exact: true }).fill('2m')
        await page.getByLabel('Notify', { exact: true }).selectOption('state_changes')
        await page.getByLabel('Ping URL', { exact: true }).fill('')
        await page.getByRole('button', { name: 'Save changes' }).focus()
        await page.keyboard.press('Enter')
        await until(async () => (page.url().endsWith(`#/cron/${id}`) ? true : undefined))
        expect((await json(`/api/cron/jobs/${id}`)).body.job).toMatchObject({
          timeout_ms: 120_000,
          overlap: 'queue_one',
          notify: 'state_changes',
          ping_url: null,
        })
        // A bare number is seconds, as the field's hint says (an outside probe: the form sent "600"
        // as typed, which the API refuses), and the job page shows the setting as written, exactly.
        await page.goto(`${server.url}/ui#/cron/${id}/edit`)
        await page.getByRole('heading', { name: 'Edit ui-run-settings' }).waitFor()
        await page.getByLabel('Timeout', { exact: true }).fill('5430')
        await page.getByRole('button', { name: 'Save changes' }).focus()
        await page.keyboard.press('Enter')
        await until(async () => (page.url().endsWith(`#/cron/${id}`) ? true : undefined))
        expect((await json(`/api/cron/jobs/${id}`)).body.job).toMatchObject({ timeout_ms: 5_430_000 })
        const shown = page.locator('dt', { hasText: 'Time-out' }).locator('xpath=following-sibling::dd[1]')
        await expect.poll(async () => (await shown.textContent())?.trim()).toBe('5430s')
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('deletes a job after a dialog that names it; Escape keeps it, and the focus lands on a neighbour', async () => {
      for (const name of ['ui-del-a', 'ui-del-b']) {
        await json('/api/cron/jobs', {
          json: { kind: 'shell', name, schedule_type: 'every', schedule: '1h', command: 'echo x' },
        })
      }
      const victim = (await json('/api/cron/jobs/ui-del-a')).body.job.id as string
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron?q=ui-del-`)
      try {
        const remove = page.getByRole('button', { name: 'Delete ui-del-a' })
        await remove.focus()
        await page.keyboard.press('Enter')
        const dialog = page.getByRole('dialog', { name: 'Delete cron job ui-del-a?' })
        await dialog.waitFor()
        expect(await focusedText(page)).toBe('Cancel')
        await page.screenshot({ path: await screenshotPath('cron-delete-dialog') })
        await page.keyboard.press('Escape')
        await dialog.waitFor({ state: 'detached' })
        expect(await focused(page, 'data-key')).toBe(`delete:${victim}`)
        expect((await json(`/api/cron/jobs/${victim}`)).status).toBe(200)

        await page.keyboard.press('Enter')
        await dialog.waitFor()
        await page.keyboard.press('Shift+Tab')
        expect(await focusedText(page)).toBe('Delete ui-del-a')
        await page.keyboard.press('Enter')
        await dialog.waitFor({ state: 'detached' })
        expect(await announced(page, 'Deleted')).toBe('Deleted ui-del-a')
        await until(async () =>
          (await page.locator('tr[data-job="ui-del-a"]').count()) === 0 ? true : undefined,
        )
        // The next row's link.
        expect(await focusedText(page)).toBe('ui-del-b')
        expect((await json(`/api/cron/jobs/${victim}`)).status).toBe(404)

        // From the job's own page: to the list.
        const other = (await json('/api/cron/jobs/ui-del-b')).body.job.id as string
        await page.goto(`${server.url}/ui#/cron/${other}`)
        await page.getByRole('heading', { name: 'ui-del-b' }).waitFor()
        await page.getByRole('button', { name: 'Delete ui-del-b' }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('button', { name: 'Delete ui-del-b', exact: true }).last().waitFor()
        await page.keyboard.press('Shift+Tab')
        await page.keyboard.press('Enter')
        await until(async () => (page.url().endsWith('#/cron') ? true : undefined))
        await page.getByRole('heading', { name: 'Cron', exact: true }).waitFor()
        expect(await focused(page, 'id')).toBe('main')
        expect((await json(`/api/cron/jobs/${other}`)).status).toBe(404)
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('runs a saved workflow from the workflows page by keyboard', async () => {
      const saved = await json('/api/workflows/saved/ui-run-me', {
        method: 'PUT',
        json: { yaml_content: 'name: ui-run-me\nsteps:\n  - id: a\n    run: echo ran\n' },
      })
      expect(saved.status).toBe(200)
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/workflows`)
      try {
        const run = page.getByRole('button', { name: 'Run ui-run-me' })
        await run.focus()
        await page.keyboard.press('Enter')
        const text = await announced(page, 'Started ui-run-me')
        const started = await until(async () =>
          ((await json('/api/workflows/runs?limit=50')).body.runs as Json[]).find(
            (one) => one.workflow_name === 'ui-run-me',
          ),
        )
        expect(text).toBe(`Started ui-run-me: run ${started.run_id.slice(0, 8)}`)
        await until(async () =>
          (await json(`/api/workflows/runs/${started.run_id}`)).body.status === 'completed'
            ? true
            : undefined,
        )
        // The list was drawn again with the run; the focus is still on the button.
        await page.locator(`tr[data-run="${started.run_id}"]`).waitFor()
        expect(await focused(page, 'data-key')).toBe('run-saved:ui-run-me')
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('lists decided approvals with who decided, a page at a time', async () => {
      const ids: string[] = []
      for (let index = 0; index < 27; index++) {
        const asked = await json('/api/tools/exec', { json: { command: `echo ui-history-${index}` } })
        ids.push(asked.body.approval_id)
        await json(`/api/approvals/${asked.body.approval_id}`, {
          json: { decision: index === 26 ? 'deny' : 'approve' },
        })
      }
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/approvals`)
      try {
        await page.getByRole('heading', { name: 'Decided' }).waitFor()
        const rows = page.locator('tr[data-decided]')
        expect(await rows.count()).toBe(25)
        const newest = page.locator(`tr[data-decided="${ids[26]}"]`)
        expect(await newest.textContent()).toContain('echo ui-history-26')
        expect(await newest.locator('[data-status]').first().getAttribute('data-status')).toBe('denied')
        expect(await newest.textContent()).toContain(server.app.approvals.origin)

        const older = page.getByRole('button', { name: 'Show older' })
        await older.focus()
        await page.keyboard.press('Enter')
        await until(async () => ((await rows.count()) === 27 ? true : undefined))
        // The focus moved to the first row read, and no more pages are left.
        const first = await page.evaluate<string | null>(
          "document.activeElement?.closest('tr')?.getAttribute('data-decided') ?? null",
        )
        expect(first).toBe(
          (await page.locator('tr[data-decided]').nth(25).getAttribute('data-decided')) as string,
        )
        expect(await older.isHidden()).toBe(true)
        await page.screenshot({ path: await screenshotPath('approvals-history'), fullPage: false })
        expect(
          new Set(await rows.evaluateAll((all) => all.map((row) => row.getAttribute('data-decided')))),
        ).toEqual(new Set(ids))
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('retries a failed run from the job page by keyboard: a new manual run, focus kept on Retry', async () => {
      const created = await json('/api/cron/jobs', {
        json: {
          kind: 'shell',
          name: 'ui-flaky',
          schedule_type: 'cron',
          schedule: '0 4 * * *',
          command: 'echo broke; exit 3',
        },
      })
      const jobId = created.body.job.id as string
      await json(`/api/cron/jobs/${jobId}/trigger`, { method: 'POST', json: {} })
      const runsOf = async () => ((await json(`/api/cron/runs?job=${jobId}`)).body.entries ?? []) as Json[]
      const failed = await until(async () => (await runsOf()).find((run) => run.status === 'failed'), 60_000)
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/cron/${jobId}`)
      try {
        await page.getByText('Live updates: on').waitFor()
        const retry = page.getByRole('button', { name: 'Retry the failed run of ui-flaky', exact: true })
        await retry.focus()
        await page.keyboard.press('Enter')
        expect(await announced(page, 'Retried ui-flaky')).toContain('Retried ui-flaky')
        await until(async () => ((await runsOf()).length >= 2 ? true : undefined), 60_000, 'the retry run')
        expect(await focused(page, 'data-key')).toBe(`retry:${failed.id}`)
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })
  },
)
