/**
 * The approvals page never asks a person to approve what they cannot see: a redraw must not move
 * another approval's Approve button under the pointer (a request arriving, one above decided
 * elsewhere), the keyboard focus stays on the approval it was on, and the announcement says what
 * the server did with the decision. Real Chromium, real server, the pointer driven by coordinates.
 */
import type { Browser, Locator, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { chromiumMissing, launchBrowser, openDashboardPage } from './fixtures/browser.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

/**
 * A command of `words` words after its name, drawn wrapped over as many lines as it needs: two
 * approvals asked with names of the same length and the same count draw cards exactly as tall.
 */
function command(name: string, words: number): string {
  return `echo ${name}${' padding'.repeat(words)}`
}

/** Waits until the announcer says something matching `pattern`; returns it. */
function announced(page: Page, pattern: RegExp): Promise<string> {
  return until(async () => {
    const text = (await page.locator('#announcer').textContent()) ?? ''
    return pattern.test(text) ? text : undefined
  })
}

/** Waits until `button` takes activation again (it ignores it for a moment after the list moved). */
function enabled(button: Locator): Promise<true> {
  return until(async () => ((await button.isEnabled()) ? true : undefined), 15_000, 'the button enabled')
}

/** The centre of `button`, in the page's viewport. */
async function centre(button: Locator): Promise<{ x: number; y: number }> {
  const box = await button.boundingBox()
  if (box === null) throw new Error('the button is not drawn')
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 }
}

describe.skipIf(chromiumMissing !== undefined)(
  `the approvals page in Chromium: no decision under a moved pointer${chromiumMissing === undefined ? '' : ` (skipped: ${chromiumMissing})`}`,
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
    // Each test starts with nothing pending: what a test left would sit above its cards.
    afterEach(async () => {
      const pending = (await (await server.request('/api/approvals?status=pending')).json()) as Json
      for (const approval of pending.approvals as Json[])
        await server.request(`/api/approvals/${approval.id}`, { json: { decision: 'deny' } })
    })

    const ask = async (text: string): Promise<string> => {
      const asked = await server.request('/api/tools/exec', { json: { command: text } })
      expect(asked.status).toBe(202)
      return ((await asked.json()) as Json).approval_id as string
    }
    const statusOf = async (id: string): Promise<string> =>
      ((await (await server.request(`/api/approvals/${id}`)).json()) as Json).status as string

    it('does not approve a request that arrives while the pointer rests on another one’s Approve', async () => {
      const first = await ask(command('ui-pointer-a', 150))
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/approvals`)
      try {
        await page.getByText('Live updates: on').waitFor()
        const approveFirst = page
          .locator(`li[data-approval="${first}"]`)
          .getByRole('button', { name: 'Approve' })
        await enabled(approveFirst)
        const pointer = await centre(approveFirst)
        await page.mouse.move(pointer.x, pointer.y)

        // The attacker's request: as tall as the first, so that drawn above it its Approve button
        // would take the place of the first one's, exactly under the pointer.
        const second = await ask(command('ui-pointer-b', 150))
        await page.locator(`li[data-approval="${second}"] button.approve`).waitFor()
        await page.mouse.click(pointer.x, pointer.y)

        // The click was handled (ignored while the list settles, or it approved the first).
        await announced(page, /^(Approved|Not )/)
        expect(await statusOf(second)).toBe('pending')
        // Oldest first: the new request was added below the first (whether or not that is still shown).
        const shown = await page
          .locator('li[data-approval]')
          .evaluateAll((cards) => cards.map((card) => card.dataset.approval))
        expect(shown.at(-1)).toBe(second)
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('ignores a click for a moment after a card above was removed, so the next one cannot slide under it', async () => {
      for (const name of ['ui-slide-1', 'ui-slide-2', 'ui-slide-3']) await ask(command(name, 40))
      const { page, errors } = await openDashboardPage(browser, 'about:blank')
      try {
        // The page's timers on a clock this test drives: the moment after the redraw lasts until it says.
        await page.clock.install()
        await page.goto(`${server.url}/ui#/approvals`)
        await page.getByText('Live updates: on').waitFor()
        const cards = page.locator('li[data-approval]')
        await until(async () => ((await cards.count()) === 3 ? true : undefined))
        const [above, aimed, below] = (await cards.evaluateAll((all) =>
          all.map((card) => card.dataset.approval),
        )) as [string, string, string]
        const approveAimed = page.locator(`li[data-approval="${aimed}"] button.approve`)
        await enabled(approveAimed)
        const pointer = await centre(approveAimed)
        await page.mouse.move(pointer.x, pointer.y)
        const now = await page.evaluate(() => Date.now())
        await page.clock.pauseAt(now + 1000)

        // The card above is decided elsewhere: every card below moves up by one card.
        await server.request(`/api/approvals/${above}`, { json: { decision: 'deny' } })
        const gone = page.locator(`li[data-approval="${above}"]`)
        // The page reads again 250 ms (its clock) after the event.
        await until(async () => {
          await page.clock.runFor(250)
          return (await gone.count()) === 0 ? true : undefined
        })
        await page.mouse.click(pointer.x, pointer.y)
        await page.clock.resume()

        expect(await announced(page, /^(Approved|Not )/)).toMatch(/^Not decided/)
        expect(await statusOf(below)).toBe('pending')
        expect(await statusOf(aimed)).toBe('pending')
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('keeps the keyboard focus on the same approval as requests arrive, and decides it by Enter', async () => {
      const first = await ask(command('ui-keys-a', 0))
      const { page, errors } = await openDashboardPage(browser, `${server.url}/ui#/approvals`)
      try {
        await page.getByText('Live updates: on').waitFor()
        const approveFirst = page
          .locator(`li[data-approval="${first}"]`)
          .getByRole('button', { name: 'Approve' })
        await enabled(approveFirst)
        await approveFirst.focus()
        const second = await ask(command('ui-keys-b', 0))
        await page.locator(`li[data-approval="${second}"]`).waitFor()
        expect(
          await page.evaluate<string | null>("document.activeElement?.getAttribute('data-key') ?? null"),
        ).toBe(`approve:${first}`)
        await enabled(approveFirst)
        await page.keyboard.press('Enter')
        expect(await announced(page, /^(Approved|Not )/)).toBe('Approved: Execute: ⟦echo ui-keys-a⟧')
        expect(await statusOf(first)).toBe('approved')
        expect(await statusOf(second)).toBe('pending')
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })

    it('says when an approval was already decided elsewhere instead of announcing it approved', async () => {
      const id = await ask('echo ui-decided-elsewhere')
      const { page, errors } = await openDashboardPage(browser, 'about:blank')
      try {
        // No live updates: the page still shows the approval after it was denied elsewhere.
        await page.route('**/api/events*', () => undefined)
        await page.goto(`${server.url}/ui#/approvals`)
        const approve = page.locator(`li[data-approval="${id}"]`).getByRole('button', { name: 'Approve' })
        await enabled(approve)
        await server.request(`/api/approvals/${id}`, { json: { decision: 'deny' } })
        await approve.click()
        expect(await announced(page, /^(Approved|Not )/)).toBe(
          'Not approved: Execute: ⟦echo ui-decided-elsewhere⟧ (it was already decided: denied)',
        )
        expect(await statusOf(id)).toBe('denied')
        expect(errors).toEqual([])
      } finally {
        await page.context().close()
      }
    })
  },
)
