import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

describe.skipIf(chromiumMissing !== undefined)(
  `the run page's Rerun button in Chromium (issue 25)${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: TestServer
    let work: string
    beforeAll(async () => {
      browser = await launchBrowser()
      server = await startTestServer()
      work = await mkdtemp(join(tmpdir(), 'lango-ui-rerun-'))
    })
    afterAll(async () => {
      await browser?.close()
      await server?.dispose()
      if (work !== undefined) await rm(work, { recursive: true, force: true })
    })

    const ran = async () => {
      const counts: Record<string, number> = {}
      for (const step of ['a', 'b', 'c', 'd']) {
        const text = await readFile(join(work, `${step}.log`), 'utf8').catch(() => '')
        counts[step] = text.split('\n').filter((line) => line === 'ran').length
      }
      return counts
    }
    const getRun = async (id: string) =>
      (await (await server.request(`/api/workflows/runs/${id}`)).json()) as Json
    const runsOf = async () =>
      ((await (await server.request('/api/workflows/runs?limit=50')).json()) as Json).runs as Json[]

    it('reruns from the failed step by keyboard: focus stays on the button, the result is announced', async () => {
      const yaml = [
        'name: ui-rerun',
        'steps:',
        `  - { id: a, run: "echo ran >> ${work}/a.log && echo alpha" }`,
        `  - { id: b, run: "echo ran >> ${work}/b.log && echo beta-{{a.result}}", depends_on: [a] }`,
        `  - { id: c, run: "echo ran >> ${work}/c.log && test -f ${work}/c.ok && echo gamma-{{b.result}}", depends_on: [b] }`,
        `  - { id: d, run: "echo ran >> ${work}/d.log && echo delta", depends_on: [a] }`,
      ].join('\n')
      const started = await server.request('/api/workflows/runs', {
        json: { yaml_content: yaml, wait_seconds: 30 },
      })
      const original = (await started.json()) as Json
      expect(original.status).toBe('failed')
      await writeFile(join(work, 'c.ok'), '')

      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
      context.setDefaultTimeout(10_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      try {
        await page.goto(`${server.url}/ui#/workflows/${original.run_id}`)
        await page.getByRole('heading', { name: 'ui-rerun' }).waitFor()
        const from = page.getByLabel('Rerun from')
        expect(await from.inputValue()).toBe('')
        // Keyboard only: from the list, Tab to the button, Enter.
        await from.focus()
        await page.keyboard.press('Tab')
        const button = page.getByRole('button', { name: 'Rerun', exact: true })
        expect(await page.evaluate<string | null>("document.activeElement.getAttribute('data-key')")).toBe(
          `rerun:${original.run_id}`,
        )
        expect(await button.getAttribute('data-key')).toBe(`rerun:${original.run_id}`)
        await page.keyboard.press('Enter')

        await until(async () => {
          const text = await page.locator('#announcer').textContent()
          return text?.startsWith('Started rerun') ? text : undefined
        })
        expect(await page.locator('#announcer').textContent()).toContain(
          'of ui-rerun: runs again c; reuses a, b, d',
        )
        const rerun = await until(async () =>
          (await runsOf()).find((run) => run.rerun_of === original.run_id),
        )
        await until(async () => ((await getRun(rerun.run_id)).status === 'completed' ? true : undefined))
        expect(await ran()).toEqual({ a: 1, b: 1, c: 2, d: 1 })
        // The page was drawn again (the new run's events refresh it); the focus is still on the button.
        await page.getByRole('link', { name: `Open the rerun ${rerun.run_id.slice(0, 8)}` }).waitFor()
        expect(await page.evaluate<string | null>("document.activeElement.getAttribute('data-key')")).toBe(
          `rerun:${original.run_id}`,
        )
        await page.screenshot({ path: await screenshotPath('workflow-rerun'), fullPage: true })

        // From step b, chosen in the list: b and c run again, a and d do not.
        await from.selectOption('b')
        await from.focus()
        await page.keyboard.press('Tab')
        await page.keyboard.press('Enter')
        await until(async () => {
          const text = await page.locator('#announcer').textContent()
          return text?.includes('runs again b, c; reuses a, d') ? text : undefined
        })
        const fromB = await until(async () =>
          (await runsOf()).find((run) => run.rerun_of === original.run_id && run.run_id !== rerun.run_id),
        )
        await until(async () => ((await getRun(fromB.run_id)).status === 'completed' ? true : undefined))
        expect(await ran()).toEqual({ a: 1, b: 2, c: 3, d: 1 })

        // The rerun's own page: "Rerun of" links back, and reused steps say where they came from.
        await page.goto(`${server.url}/ui#/workflows/${rerun.run_id}`)
        await page.getByRole('link', { name: original.run_id }).waitFor()
        const stepA = page.locator('li.step[data-step="a"]')
        await stepA.waitFor()
        expect(await stepA.textContent()).toContain(`reused from ${original.run_id.slice(0, 8)}`)
        expect(await page.locator('li.step[data-step="c"] .reused').count()).toBe(0)
        expect(errors).toEqual([])
      } finally {
        await context.close()
      }
    })
  },
)
