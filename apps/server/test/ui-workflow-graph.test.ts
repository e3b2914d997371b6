import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

// Issue 26: a workflow run's graph fits its box (or scrolls inside it) at 1280 px, wraps step ids
// between words, keeps parallel steps side by side on a phone, and says every state in words and an
// icon, not in colour alone.

const LONG_B = 'fetch_customer_records_from_archive'
const LONG_C = 'render_quarterly_summary_report'

/** The word and icon each state shows (workflow-graph.js STEP_STATES). */
const STATE_TEXT: Record<string, string> = {
  pending: '○pending',
  running: '▶running',
  completed: '✓completed',
  reused: '↺reused',
  failed: '✕failed',
  skipped: '↷skipped',
  cancelled: '⊘cancelled',
}

describe.skipIf(chromiumMissing !== undefined)(
  `the run graph in Chromium${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
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

    const getRun = async (id: string) =>
      (await (await server.request(`/api/workflows/runs/${id}`)).json()) as Json
    const startRun = async (yaml: string, waitSeconds: number) => {
      const response = await server.request('/api/workflows/runs', {
        json: { yaml_content: yaml, wait_seconds: waitSeconds },
      })
      return (await response.json()) as Json
    }

    async function openRun(
      runId: string,
      viewport: { width: number; height: number },
    ): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
      const context = await browser.newContext({ viewport })
      context.setDefaultTimeout(10_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      await page.goto(`${server.url}/ui#/workflows/${runId}`)
      await page.locator('.graph .node').first().waitFor()
      return { page, errors, close: () => context.close() }
    }

    /** The shown state of every step as the API gives it, and what its box says. */
    async function statesOnPage(page: Page, runId: string): Promise<string[]> {
      const run = await getRun(runId)
      const seen: string[] = []
      for (const step of run.steps as Json[]) {
        const state = step.status === 'completed' && step.reused_from ? 'reused' : step.status
        const node = page.locator(`.graph .node[data-step="${step.step_id}"]`)
        await expect.poll(() => node.getAttribute('data-state')).toBe(state)
        expect(await node.locator('.badge').textContent()).toBe(STATE_TEXT[state])
        expect(await node.locator('.badge .state-icon').getAttribute('aria-hidden')).toBe('true')
        seen.push(state)
      }
      return seen
    }

    /** Where a step id's text breaks into lines: the characters each line ends with. */
    const lineEnds = (page: Page, stepId: string, part: string) =>
      page.evaluate<string[]>(`(() => {
        const label = document.querySelector('.graph .node[data-step="${stepId}"] ${part}')
        const ends = []
        let last = null
        let top = null
        const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT)
        for (let text = walker.nextNode(); text !== null; text = walker.nextNode()) {
          for (let index = 0; index < text.data.length; index++) {
            const range = document.createRange()
            range.setStart(text, index)
            range.setEnd(text, index + 1)
            const y = Math.round(range.getBoundingClientRect().top)
            if (top !== null && y > top + 2) ends.push(last)
            top = y
            last = text.data[index]
          }
        }
        return ends
      })()`)

    const fits = (page: Page) =>
      page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')

    const states = new Set<string>()
    let forkRun = ''

    it('a fork on a phone: parallel steps side by side, ids wrapped between words, nothing wider than the screen', async () => {
      const fork = await startRun(
        [
          'name: ui-graph-fork',
          'steps:',
          '  - { id: start, run: "echo go" }',
          `  - { id: ${LONG_B}, run: "echo b", depends_on: [start] }`,
          `  - { id: ${LONG_C}, run: "exit 3", depends_on: [start] }`,
          `  - { id: publish, run: "echo p", depends_on: [${LONG_B}, ${LONG_C}] }`,
        ].join('\n'),
        30,
      )
      expect(fork.status).toBe('failed')
      forkRun = fork.run_id
      const { page, errors, close } = await openRun(forkRun, { width: 390, height: 844 })
      try {
        for (const state of await statesOnPage(page, forkRun)) states.add(state)
        const box = async (id: string) => {
          const found = await page.locator(`.graph .node[data-step="${id}"]`).boundingBox()
          if (found === null) throw new Error(`no box for ${id}`)
          return found
        }
        const [b, c, start, publish] = [
          await box(LONG_B),
          await box(LONG_C),
          await box('start'),
          await box('publish'),
        ]
        // Side by side: one row, the fork between the first step and the last.
        expect(Math.abs(b.y - c.y)).toBeLessThanOrEqual(1)
        expect(b.x + b.width).toBeLessThanOrEqual(c.x)
        expect(start.y + start.height).toBeLessThan(b.y)
        expect(publish.y).toBeGreaterThan(Math.max(b.y + b.height, c.y + c.height))
        // The fork's lines: one from start to each branch, one from each branch to publish.
        expect(await page.locator('.edges path.edge').count()).toBe(4)
        // The long ids wrap, and only after a `_`.
        for (const id of [LONG_B, LONG_C]) {
          const ends = await lineEnds(page, id, '.node-id')
          expect(ends.length).toBeGreaterThan(0)
          expect(ends.every((end) => end === '_')).toBe(true)
        }
        // So do the ids in "after …" (or after a comma or space between them).
        const afterEnds = await lineEnds(page, 'publish', '.node-after')
        expect(afterEnds.length).toBeGreaterThan(0)
        expect(afterEnds.every((end) => end === '_' || end === ' ' || end === ',')).toBe(true)
        expect(await fits(page)).toBe(true)
        await page.screenshot({ path: await screenshotPath('workflow-graph-phone'), fullPage: true })
        expect(errors).toEqual([])
      } finally {
        await close()
      }
    })

    it('a long chain at 1280 px scrolls inside its box, which stays within the page', async () => {
      const ids = Array.from({ length: 10 }, (_, index) => `stage_number_${index}`)
      const chain = await startRun(
        [
          'name: ui-graph-chain',
          'steps:',
          ...ids.map((id, index) =>
            index === 0
              ? `  - { id: ${id}, run: "true" }`
              : `  - { id: ${id}, run: "true", depends_on: [${ids[index - 1]}] }`,
          ),
        ].join('\n'),
        30,
      )
      expect(chain.status).toBe('completed')
      const { page, errors, close } = await openRun(chain.run_id, { width: 1280, height: 900 })
      try {
        const measured = await page.evaluate<{
          graph: DOMRectLike
          main: DOMRectLike
          scrolls: boolean
        }>(`(() => {
          const graph = document.querySelector('.graph')
          const main = document.querySelector('main')
          const style = getComputedStyle(main)
          const outer = main.getBoundingClientRect()
          return {
            graph: graph.getBoundingClientRect().toJSON(),
            main: { left: outer.left + parseFloat(style.paddingLeft), right: outer.right - parseFloat(style.paddingRight) },
            scrolls: graph.scrollWidth > graph.clientWidth && ['auto', 'scroll'].includes(getComputedStyle(graph).overflowX),
          }
        })()`)
        expect(measured.graph.left).toBeGreaterThanOrEqual(measured.main.left - 1)
        expect(measured.graph.right).toBeLessThanOrEqual(measured.main.right + 1)
        expect(measured.scrolls).toBe(true)
        expect(await fits(page)).toBe(true)
        // The last step is reached by the keyboard: focusing it scrolls it into the box.
        await page.locator(`.graph .node[data-step="${ids[9]}"]`).focus()
        const last = await page.locator(`.graph .node[data-step="${ids[9]}"]`).boundingBox()
        expect(last).not.toBeNull()
        expect((last?.x ?? 0) + (last?.width ?? 0)).toBeLessThanOrEqual(measured.graph.right + 1)
        await page.screenshot({ path: await screenshotPath('workflow-graph-chain'), fullPage: true })
        expect(errors).toEqual([])
      } finally {
        await close()
      }
    })

    it('says every state in words and an icon, and pending never looks like running', async () => {
      // Running and pending, then cancelled.
      const slow = await startRun(
        [
          'name: ui-graph-slow',
          'steps:',
          '  - { id: slow, run: "sleep 30" }',
          '  - { id: after_slow, run: "echo x", depends_on: [slow] }',
        ].join('\n'),
        0,
      )
      await until(async () => {
        const run = await getRun(slow.run_id)
        return run.steps.find((step: Json) => step.step_id === 'slow')?.status === 'running' ? run : undefined
      })
      const { page, errors, close } = await openRun(slow.run_id, { width: 1280, height: 900 })
      try {
        for (const state of await statesOnPage(page, slow.run_id)) states.add(state)
        const running = page.locator('.graph .node[data-step="slow"] .badge')
        const pending = page.locator('.graph .node[data-step="after_slow"] .badge')
        expect(await running.getAttribute('class')).not.toBe(await pending.getAttribute('class'))
        const look = (step: string) =>
          page.evaluate<string>(`(() => {
            const style = getComputedStyle(document.querySelector('.graph .node[data-step="${step}"] .badge'))
            return style.backgroundColor + ' ' + style.boxShadow
          })()`)
        expect(await look('slow')).not.toBe(await look('after_slow'))

        await server.request(`/api/workflows/runs/${slow.run_id}/cancel`, { method: 'POST' })
        await until(async () => ((await getRun(slow.run_id)).status === 'cancelled' ? true : undefined))
        await page.locator('.graph .node[data-step="slow"][data-state="cancelled"]').waitFor()
        for (const state of await statesOnPage(page, slow.run_id)) states.add(state)
        expect(errors).toEqual([])
      } finally {
        await close()
      }

      // Reused: a rerun of the failed fork takes its completed steps from the first run.
      const rerun = await server.request(`/api/workflows/runs/${forkRun}/rerun`, { json: {} })
      expect(rerun.status).toBeLessThan(300)
      const rerunId = ((await rerun.json()) as Json).run_id as string
      await until(async () => {
        const run = await getRun(rerunId)
        return run.status === 'running' || run.status === 'pending' ? undefined : run
      })
      const second = await openRun(rerunId, { width: 1280, height: 900 })
      try {
        for (const state of await statesOnPage(second.page, rerunId)) states.add(state)
        expect(second.errors).toEqual([])
      } finally {
        await second.close()
      }
      expect([...states].sort()).toEqual(
        ['cancelled', 'completed', 'failed', 'pending', 'reused', 'running', 'skipped'].sort(),
      )
    })
  },
)

interface DOMRectLike {
  readonly left: number
  readonly right: number
}
