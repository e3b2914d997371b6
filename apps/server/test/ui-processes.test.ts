import { readFile, writeFile } from 'node:fs/promises'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, screenshotPath } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// Issue 26: the Processes page as the operator's console. Its output box follows the end of the
// output (and stays where the reader scrolled it), the keyboard scrolls it, and "Download whole
// output" saves everything the server holds, secrets masked (GET /api/processes/:id/output).

const TOKEN = 'ui-processes-token-9b3e'

/** Starts a background process as the operator would (exec_bg, no approval asked). */
async function startProcess(server: TestServer, command: string): Promise<string> {
  const tool = server.app.tools.find((candidate) => candidate.name === 'exec_bg')
  if (tool === undefined) throw new Error('exec_bg missing')
  const started = (await tool.handler({ command }, {})) as { id: string }
  return started.id
}

describe('GET /api/processes/:id/output', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer((config) => ({ ...config, server: { ...config.server, apiToken: TOKEN } }))
  })
  afterAll(async () => {
    await server?.dispose()
  })
  const auth = { authorization: `Bearer ${TOKEN}` }

  it('serves all the buffered output as a text file with the secrets masked', async () => {
    // 3000 lines: far more than the 2 KiB tail GET /api/processes shows.
    const id = await startProcess(server, `echo "token=${TOKEN}"; seq 1 3000; echo done`)
    const process = server.app.processes.require(id)
    await process.wait()
    const response = await server.request(`/api/processes/${id}/output`, { headers: auth })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${id}.log"`)
    expect(response.headers.get('x-lango-dropped-bytes')).toBe('0')
    const text = await response.text()
    expect(text).not.toContain(TOKEN)
    expect(text.split('\n')[0]).toMatch(/^token=\[/)
    const lines = text.split('\n')
    expect(lines.slice(1, 3001)).toEqual(Array.from({ length: 3000 }, (_, index) => String(index + 1)))
    expect(lines.at(-2)).toBe('done')
    // The same bytes exec_status reads, as it reads them.
    expect(text).toBe(process.read(0).output)
  })

  it('needs the token, and answers an unknown id 404', async () => {
    const id = await startProcess(server, 'echo hi')
    expect((await server.request(`/api/processes/${id}/output`)).status).toBe(401)
    const unknown = await server.request('/api/processes/proc_nothing/output', { headers: auth })
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { code: string; reason: string } }).error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: 'EXEC_PROCESS_NOT_FOUND',
    })
  })
})

describe.skipIf(chromiumMissing !== undefined)(
  `the Processes page in Chromium${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
  () => {
    let browser: Browser
    let server: TestServer
    beforeAll(async () => {
      browser = await launchBrowser()
      server = await startTestServer((config) => ({
        ...config,
        server: { ...config.server, apiToken: TOKEN },
      }))
    })
    afterAll(async () => {
      await browser?.close()
      await server?.dispose()
    })

    async function openProcesses(): Promise<{ page: Page; errors: string[]; close: () => Promise<void> }> {
      const context = await browser.newContext({
        viewport: { width: 1280, height: 900 },
        acceptDownloads: true,
      })
      context.setDefaultTimeout(10_000)
      await context.addInitScript(`sessionStorage.setItem('lango.apiToken', ${JSON.stringify(TOKEN)})`)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      await page.goto(`${server.url}/ui#/processes`)
      await page.getByRole('heading', { name: 'Processes', exact: true }).waitFor()
      return { page, errors, close: () => context.close() }
    }

    /** The output box's scroll: how far from its end, and its position. */
    const scroll = (page: Page, id: string) =>
      page.evaluate<{ fromEnd: number; top: number; overflows: boolean; text: string }>(`(() => {
        const box = document.querySelector('[data-follow="tail:${id}"]')
        return {
          fromEnd: box.scrollHeight - box.clientHeight - box.scrollTop,
          top: box.scrollTop,
          overflows: box.scrollHeight > box.clientHeight,
          text: box.textContent,
        }
      })()`)

    it('keeps the output box at the newest line across refreshes, unless the reader scrolled up', async () => {
      const marker = `${server.home}/more`
      // 80 lines at once (more than the box shows), then one more line each time the test asks. A
      // line longer than any secret follows it: the masker holds back a tail that could start one.
      const id = await startProcess(
        server,
        `seq -f 'line-%g' 1 80; n=0; while true; do if [ -e ${marker}-$n ]; then echo extra-$n; echo ${'='.repeat(40)}; n=$((n+1)); fi; sleep 0.05; done`,
      )
      const { page, errors, close } = await openProcesses()
      try {
        const box = page.locator(`[data-follow="tail:${id}"]`)
        await expect.poll(async () => (await box.textContent())?.includes('line-80')).toBe(true)
        // A keyboard-scrollable region with a name.
        expect(await box.getAttribute('role')).toBe('region')
        expect(await box.getAttribute('tabindex')).toBe('0')
        expect(await box.getAttribute('aria-label')).toMatch(/^Output of seq -f/)
        const first = await scroll(page, id)
        expect(first.overflows).toBe(true)
        expect(first.fromEnd).toBeLessThanOrEqual(2)

        // New output arrives; the 2 s refresh draws it and the box is still at its end.
        await writeFile(`${marker}-0`, '')
        await expect
          .poll(async () => (await scroll(page, id)).text.includes('extra-0'), { timeout: 8000 })
          .toBe(true)
        expect((await scroll(page, id)).fromEnd).toBeLessThanOrEqual(2)

        // The reader scrolls up with the keyboard: the refresh leaves the box where it is.
        await box.focus()
        await page.keyboard.press('Home')
        await expect.poll(async () => (await scroll(page, id)).top).toBe(0)
        await writeFile(`${marker}-1`, '')
        await expect
          .poll(async () => (await scroll(page, id)).text.includes('extra-1'), { timeout: 8000 })
          .toBe(true)
        expect((await scroll(page, id)).top).toBe(0)
        // End takes the reader back to the newest line, which the box follows again.
        await box.focus()
        await page.keyboard.press('End')
        await expect.poll(async () => (await scroll(page, id)).fromEnd).toBeLessThanOrEqual(2)
        await writeFile(`${marker}-2`, '')
        await expect
          .poll(async () => (await scroll(page, id)).text.includes('extra-2'), { timeout: 8000 })
          .toBe(true)
        expect((await scroll(page, id)).fromEnd).toBeLessThanOrEqual(2)
        await page.screenshot({ path: await screenshotPath('processes-follow'), fullPage: true })
        expect(errors).toEqual([])
      } finally {
        await close()
        await server.app.processes.require(id).kill()
      }
    })

    it('downloads the whole output, secrets masked', async () => {
      const id = await startProcess(server, `echo "token=${TOKEN}"; seq -f 'row-%g' 1 2000; echo finished`)
      await server.app.processes.require(id).wait()
      const { page, errors, close } = await openProcesses()
      try {
        const button = page.getByRole('button', { name: /^Download whole output of echo "token=/ })
        const [download] = await Promise.all([page.waitForEvent('download'), button.click()])
        expect(download.suggestedFilename()).toBe(`${id}.log`)
        const path = await download.path()
        const text = await readFile(path, 'utf8')
        expect(text).not.toContain(TOKEN)
        expect(text).toMatch(/^token=\[/)
        // The whole output, not the 2 KiB tail the page shows.
        expect(text).toContain('row-1\nrow-2\n')
        expect(text.endsWith('row-2000\nfinished\n')).toBe(true)
        await until(async () => {
          const said = await page.locator('#announcer').textContent()
          return said?.startsWith(`Downloaded ${id}.log`) ? said : undefined
        })
        expect(errors).toEqual([])
      } finally {
        await close()
      }
    })
  },
)
