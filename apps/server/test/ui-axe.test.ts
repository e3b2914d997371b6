/**
 * Accessibility (issue 26): axe-core finds no serious or critical violation on any dashboard page,
 * on a desktop, on a phone and in dark mode, with real data on every page (failing, paused and
 * zoned jobs, a failed workflow run, a pending approval, a background process). Real Chromium, real
 * server on loopback; axe is injected into the page (the context bypasses the page's CSP for that
 * script only: the dashboard itself loads nothing inline).
 */
import axe from 'axe-core'
import type { Browser, BrowserContextOptions, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const VARIANTS: readonly [string, BrowserContextOptions][] = [
  ['desktop', { viewport: { width: 1280, height: 900 } }],
  ['phone', { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }],
  ['dark', { viewport: { width: 1280, height: 900 }, colorScheme: 'dark' }],
]

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly nodes: readonly { readonly target: readonly string[] }[]
}

/** axe's serious and critical violations on the page as it stands, each as `rule: help (targets)`. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axe.source })
  const violations = await page.evaluate<Violation[]>(
    '(async () => (await globalThis.axe.run(document, { resultTypes: ["violations"] })).violations)()',
  )
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id}: ${violation.help} (${violation.nodes.map((node) => node.target.join(' ')).join(', ')})`,
    )
}

describe.skipIf(chromiumMissing !== undefined)(
  `the dashboard passes axe on every page${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: TestServer
    /** Hash routes of every page, with what each shows once drawn. */
    let pages: [string, string][]

    async function call(path: string, body?: Json): Promise<Json> {
      const response = await server.request(path, body === undefined ? {} : { json: body })
      return (await response.json()) as Json
    }

    beforeAll(async () => {
      browser = await launchBrowser()
      server = await startTestServer()
      const failing = (
        await call('/api/cron/jobs', {
          kind: 'shell',
          name: 'axe-failing',
          schedule_type: 'cron',
          schedule: '30 2 * * *',
          timezone: 'Europe/Berlin',
          command: 'echo broke; exit 3',
        })
      ).job
      const paused = (
        await call('/api/cron/jobs', {
          kind: 'shell',
          name: 'axe-paused',
          schedule_type: 'every',
          schedule: '5m',
          command: 'echo fine',
        })
      ).job
      await call(`/api/cron/jobs/${paused.id}/pause`, {})
      await call(`/api/cron/jobs/${failing.id}/trigger`, {})
      await until(async () => {
        const runs = (await call(`/api/cron/runs?job=${failing.id}`)).entries as Json[] | undefined
        return runs?.some((run) => run.status === 'failed') === true ? true : undefined
      })
      const flow = [
        'name: axe-flow',
        'steps:',
        '  - id: first',
        '    run: "echo one"',
        '  - id: left',
        '    depends_on: [first]',
        '    run: "echo left"',
        '  - id: right',
        '    depends_on: [first]',
        '    run: "echo partial; exit 4"',
        '  - id: last',
        '    depends_on: [left, right]',
        '    run: "echo never"',
      ].join('\n')
      const started = await call('/api/workflows/runs', { yaml_content: flow, wait_seconds: 0 })
      const runId = started.run_id as string
      await until(async () => {
        const run = await call(`/api/workflows/runs/${runId}`)
        return run.status === 'failed' ? true : undefined
      })
      // A background process (exec_bg waits for an approval, given through the API) and a pending approval.
      const background = await call('/api/tools/exec_bg', { command: 'echo tick; sleep 60' })
      await call(`/api/approvals/${background.approval_id}`, { decision: 'approve' })
      await call('/api/tools/exec', { command: 'echo waiting-for-a-person' })
      pages = [
        ['#/overview', 'Needs attention'],
        ['#/cron', 'axe-failing'],
        [`#/cron/${failing.id}`, 'axe-failing'],
        ['#/workflows', 'axe-flow'],
        [`#/workflows/${runId}`, 'right'],
        ['#/background', 'Background'],
        ['#/processes', 'echo tick'],
        ['#/approvals', 'waiting-for-a-person'],
      ]
    })
    afterAll(async () => {
      await browser?.close()
      await server?.dispose()
    })

    it.each(VARIANTS)('%s: no serious or critical violation on any page', async (_, options) => {
      const context = await browser.newContext({ ...options, bypassCSP: true })
      context.setDefaultTimeout(15_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      const found: Record<string, string[]> = {}
      try {
        for (const [hash, shows] of pages) {
          await page.goto(`${server.url}/ui${hash}`)
          await page.getByText('Live updates: on').waitFor()
          await page.locator('main').getByText(shows).first().waitFor()
          const violations = await seriousViolations(page)
          if (violations.length > 0) found[hash] = violations
        }
        // The control: a button without a name is a critical violation axe reports here.
        await page.evaluate("document.querySelector('main').append(document.createElement('button'))")
        expect((await seriousViolations(page)).join('\n')).toContain('button-name')
      } finally {
        await context.close()
      }
      expect(found).toEqual({})
      expect(errors).toEqual([])
    })
  },
)
