// The dashboard (`/ui`, ADR 0012) as an operator meets it: a real `lango serve` from dist with 1,000
// and then 10,000 cron jobs stored, its cron page opened in Debian's Chromium (playwright-core). Run
// after a build. Prints `dashboard  <metric>  …  PASS|FAIL` lines and, for information, the page's weight:
//
// 1. time to the first screen of the cron page, at 1,000 and at 10,000 jobs: from navigation start to
//    the moment the first page of job rows (50, issue 26: the list is paged on the server) is in the DOM (a MutationObserver installed before the page's own script reads
//    `performance.now()`, whose origin is navigation start), median of 5 cold loads, each in a new
//    browser context (no cache, no sessionStorage), after one unmeasured load that warms the server
//    (target ≤ 500 ms); the breakdown (assets loaded, API calls answered, rows built, first frame after)
//    is printed beside it;
// 2. (information) what that page transfers: the HTML, script, style sheet and the API calls it
//    makes (in the 2 s after the last row too), as sent (headers + body), with the content encoding,
//    and what gzip would make of the bodies. The live event stream (`/api/events`) stays open and is
//    not counted;
// 3. (information) where the page's script spends its time in one more load, profiled (sampling
//    profiler over CDP, which slows the load): self time by function of the dashboard modules (/ui/*.js), top 6;
// 4. click to update, at each size: the cron page filtered to failing jobs (`#/cron?failing=1`), the
//    Pause button of a row clicked, until that row shows its Resume button (the POST answered and the
//    row drawn again; target ≤ 200 ms), median of 5 rows; with the page's elements and the JS heap
//    Chromium reports for it (CDP `Performance.getMetrics`). The list is paged on the server, so
//    10,000 jobs must cost the page what 1,000 do: elements and heap at 10,000 are checked against
//    the figures of the 1,000 run just before (at most 5 % more elements, 50 % more heap).

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { SqliteCronStore } from '@lango/cron/sqlite'
import { createTestJob } from '@lango/cron/testing'
import { createApp, loadConfig, silentLogger } from '../dist/index.js'
import { launchChromium, startServe, stopServe } from './fixtures/dashboard.mjs'
import { median, reporter } from './report.mjs'

/** The job counts measured, one after the other (the second seeds the difference). */
const SIZES = [1_000, 10_000]
/** The rows of the cron page's first screen (cron.js PAGE_SIZE). */
const FIRST_PAGE = 50
const LOADS = 5
const TARGET_MS = 500
const { report, exit } = reporter('dashboard')

/** The mix an install accumulates: cron and interval schedules, time zones, deliveries, some paused or failing. */
const SCHEDULES = [
  ['cron', '0 3 * * *'],
  ['cron', '30 2 * * 1-5'],
  ['cron', '*/15 * * * *'],
  ['cron', '0 */6 * * *'],
  ['cron', '15 8 1 * *'],
  ['every', '6h'],
  ['every', '1d'],
]
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo']
const STATUSES = [null, 'completed', 'completed', 'failed', 'timed_out']

/**
 * Seeds `count` shell jobs straight through the store (past the cron service's cap of 500, SECURITY.md
 * CRON-3), before the server starts, as bench/server.bench.mjs does.
 */
async function seed(home, count, from = 0) {
  const config = await loadConfig({ env: { LANGO_HOME: home }, cwd: home })
  const app = await createApp(config, silentLogger, { passphrase: '' })
  const store = new SqliteCronStore(app.database.db)
  const now = Date.now()
  for (let i = from; i < count; i++) {
    const name = `job-${String(i).padStart(5, '0')}`
    const [scheduleType, schedule] = SCHEDULES[i % SCHEDULES.length]
    const lastStatus = STATUSES[i % STATUSES.length]
    await store.insertJob(
      createTestJob({
        id: name,
        name,
        kind: 'shell',
        prompt: null,
        command: `backup --volume vol-${i} --keep 7`,
        scheduleType,
        schedule,
        timezone: ZONES[i % ZONES.length],
        deliverTo: i % 3 === 0 ? ['webhook'] : [],
        enabled: i % 10 !== 9,
        pauseReason: i % 10 === 9 ? 'paused by operator' : null,
        createdAt: now,
        updatedAt: now,
        lastRunAt: lastStatus === null ? null : now - 3_600_000,
        lastStatus,
        consecutiveFailures: lastStatus === 'failed' || lastStatus === 'timed_out' ? 1 + (i % 4) : 0,
        nextRunAt: now + 86_400_000 + i * 60_000,
      }),
    )
  }
  await app.stop()
}

/** Before any page script: resolves with the time the `rows`-th job row is in the DOM, and the next frame. */
const OBSERVE_ROWS = `window.__lastRow = new Promise((resolve) => {
  const observer = new MutationObserver(() => {
    if (document.querySelectorAll('table.jobs tbody tr').length < ${FIRST_PAGE}) return
    observer.disconnect()
    const inDom = performance.now()
    requestAnimationFrame(() => setTimeout(() => resolve({ inDom, frame: performance.now() })))
  })
  observer.observe(document, { childList: true, subtree: true })
})`

/** Where the time went, from the Resource Timing entries of the load (ms since navigation start). */
const TIMINGS = `(() => {
  const resources = performance.getEntriesByType('resource').map((entry) => ({ path: new URL(entry.name).pathname, end: entry.responseEnd }))
  const navigation = performance.getEntriesByType('navigation')[0]
  return {
    html: navigation.responseEnd,
    // The entry module and every module it imports.
    script: Math.max(...resources.filter((entry) => entry.path.startsWith('/ui/') && entry.path.endsWith('.js')).map((entry) => entry.end)),
    domContentLoaded: navigation.domContentLoadedEventEnd,
    // The view's API calls (the event stream never ends, so it has no entry).
    api: Math.max(...resources.filter((entry) => entry.path.startsWith('/api/')).map((entry) => entry.end)),
  }
})()`

/** Self time (ms) by function of the dashboard's modules (/ui/*.js) in a CPU profile, highest first. */
function scriptSelfTimes(profile) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const self = new Map()
  profile.samples.forEach((id, index) => {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame
    const module = /\/ui\/([\w-]+\.js)$/.exec(url)?.[1]
    if (module === undefined) return
    const key = `${module}:${functionName || '(anonymous)'}:${lineNumber + 1}`
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0) / 1000)
  })
  return [...self].sort((a, b) => b[1] - a[1])
}

/**
 * One cold load of the cron page in a fresh context; with `weigh`, also the bytes of what it
 * fetched; with `profile`, the CPU profile of the load up to the last row.
 */
async function load(browser, url, { weigh = false, profile = false } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    await context.addInitScript(OBSERVE_ROWS)
    const page = await context.newPage()
    const errors = []
    page.on('pageerror', (error) => errors.push(error.message))
    const fetched = []
    if (weigh) {
      page.on('requestfinished', (request) => {
        fetched.push(
          (async () => {
            const response = await request.response()
            const sizes = await request.sizes()
            const body = await response.body()
            return {
              path: new URL(request.url()).pathname,
              headers: sizes.responseHeadersSize,
              body: sizes.responseBodySize,
              gzip: gzipSync(body).length,
              encoding: (await response.headerValue('content-encoding')) ?? 'none',
            }
          })(),
        )
      })
    }
    const cdp = profile ? await context.newCDPSession(page) : undefined
    if (cdp !== undefined) {
      await cdp.send('Profiler.enable')
      await cdp.send('Profiler.setSamplingInterval', { interval: 100 })
      await cdp.send('Profiler.start')
    }
    await page.goto(`${url}/ui#/cron`)
    const lastRow = await page.evaluate('window.__lastRow')
    const cpu = cdp === undefined ? undefined : (await cdp.send('Profiler.stop')).profile
    const timings = await page.evaluate(TIMINGS)
    if (errors.length > 0) throw new Error(`the page failed: ${errors.join('; ')}`)
    const rows = await page.locator('table.jobs tbody tr').count()
    if (rows !== FIRST_PAGE) throw new Error(`the cron page shows ${rows} rows, not ${FIRST_PAGE}`)
    // What the page asks for by itself once loaded (a refresh burst is 250 ms) counts too.
    if (weigh) await page.waitForTimeout(2_000)
    return { ...lastRow, ...timings, fetched: await Promise.all(fetched), cpu }
  } finally {
    await context.close()
  }
}

const kib = (bytes) => `${(bytes / 1024).toFixed(1)}KiB`

const CLICK_TARGET_MS = 200
const CLICKS = 5

/** Clicks the Pause button of the `index`-th row still showing one; resolves with ms until its row shows Resume. */
const PAUSE_ROW = (index) => `new Promise((resolve, reject) => {
  const buttons = [...document.querySelectorAll('table.jobs tbody tr button')].filter((b) => b.textContent.trim().startsWith('Pause '))
  const button = buttons[${index}]
  if (button === undefined) return reject(new Error('no Pause button left'))
  const name = button.closest('tr').dataset.job
  const resumed = () => [...document.querySelectorAll('table.jobs tbody tr')].some((row) => row.dataset.job === name && [...row.querySelectorAll('button')].some((b) => b.textContent.trim().startsWith('Resume ')))
  const observer = new MutationObserver(() => {
    if (!resumed()) return
    observer.disconnect()
    resolve(performance.now() - start)
  })
  observer.observe(document.querySelector('main'), { childList: true, subtree: true, characterData: true })
  const start = performance.now()
  button.click()
})`

/** The failing jobs' page: the elements it holds, its JS heap, and click-to-update times of `CLICKS` Pause buttons. */
async function clickToUpdate(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  try {
    const page = await context.newPage()
    const errors = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${url}/ui#/cron?failing=1`)
    await page.getByText('Live updates: on').waitFor()
    await page.locator('table.jobs tbody tr').first().waitFor()
    const elements = await page.evaluate("document.getElementsByTagName('*').length")
    const cdp = await context.newCDPSession(page)
    await cdp.send('Performance.enable')
    await cdp.send('HeapProfiler.collectGarbage')
    const { metrics } = await cdp.send('Performance.getMetrics')
    const heap = metrics.find((metric) => metric.name === 'JSHeapUsedSize')?.value ?? Number.NaN
    const clicks = []
    for (let i = 0; i < CLICKS; i++) clicks.push(await page.evaluate(PAUSE_ROW(0)))
    if (errors.length > 0) throw new Error(`the page failed: ${errors.join('; ')}`)
    return { elements, heap, clicks }
  } finally {
    await context.close()
  }
}

const home = await mkdtemp(join(tmpdir(), 'lango-dashboard-bench-'))
let server
let browser
try {
  browser = await launchChromium()
  let seeded = 0
  /** The figures of the previous (smaller) size, which the next is checked against. */
  let previous
  for (const jobs of SIZES) {
    await seed(home, jobs, seeded)
    seeded = jobs
    const label = jobs.toLocaleString('en-US')
    server = await startServe({ LANGO_HOME: home })
    const warmup = await load(browser, server.url)
    const samples = []
    for (let i = 0; i < LOADS; i++) samples.push(await load(browser, server.url))
    const pick = (key) => median(samples.map((sample) => sample[key]))
    const firstRender = pick('inDom')
    report(
      `cron page, ${label} jobs: navigation start to the first ${FIRST_PAGE} rows in the DOM`,
      `median=${firstRender.toFixed(0)}ms  loads=[${samples.map((sample) => sample.inDom.toFixed(0)).join(', ')}]ms  target<=${TARGET_MS}`,
      firstRender <= TARGET_MS,
    )
    console.log(
      `dashboard  (info) ${label} jobs, medians since navigation start: html ${pick('html').toFixed(0)}ms, modules ${pick('script').toFixed(0)}ms, DOMContentLoaded ${pick('domContentLoaded').toFixed(0)}ms, API calls answered ${pick('api').toFixed(0)}ms, rows in DOM ${firstRender.toFixed(0)}ms, next frame ${pick('frame').toFixed(0)}ms  (unmeasured warm-up load: ${warmup.inDom.toFixed(0)}ms)`,
    )
    const acted = await clickToUpdate(browser, server.url)
    const click = median(acted.clicks)
    report(
      `cron page, ${label} jobs, failing filter: Pause clicked to its row showing Resume`,
      `median=${click.toFixed(0)}ms  clicks=[${acted.clicks.map((ms) => ms.toFixed(0)).join(', ')}]ms  target<=${CLICK_TARGET_MS}`,
      click <= CLICK_TARGET_MS,
    )
    const mib = (bytes) => `${(bytes / 1048576).toFixed(1)}MiB`
    if (previous === undefined) {
      console.log(
        `dashboard  (info) failing jobs page, ${label} jobs: ${acted.elements} elements, JS heap ${mib(acted.heap)}`,
      )
    } else {
      report(
        `failing jobs page, ${label} jobs against ${previous.label}: elements on the page`,
        `${acted.elements} against ${previous.elements} (ratio ${(acted.elements / previous.elements).toFixed(2)})  target<=1.05`,
        acted.elements <= previous.elements * 1.05,
      )
      report(
        `failing jobs page, ${label} jobs against ${previous.label}: JS heap`,
        `${mib(acted.heap)} against ${mib(previous.heap)} (ratio ${(acted.heap / previous.heap).toFixed(2)})  target<=1.5`,
        acted.heap <= previous.heap * 1.5,
      )
    }
    previous = { label, elements: acted.elements, heap: acted.heap }
    if (jobs === SIZES[SIZES.length - 1]) {
      const { fetched } = await load(browser, server.url, { weigh: true })
      const total = (key) => fetched.reduce((sum, entry) => sum + entry[key], 0)
      const encodings = [...new Set(fetched.map((entry) => entry.encoding))].join(', ')
      const byPath = new Map()
      for (const entry of fetched) {
        const seen = byPath.get(entry.path) ?? { body: entry.body, times: 0 }
        byPath.set(entry.path, { ...seen, times: seen.times + 1 })
      }
      console.log(
        `dashboard  (info) cron page transfer, ${label} jobs: ${kib(total('headers') + total('body'))} in ${fetched.length} responses (bodies ${kib(total('body'))}, content-encoding: ${encodings}; gzip would make the bodies ${kib(total('gzip'))})  ${[
          ...byPath,
        ]
          .map(([path, { body, times }]) => `${path}=${kib(body)}${times > 1 ? ` ×${times}` : ''}`)
          .join('  ')}`,
      )

      const { cpu, inDom } = await load(browser, server.url, { profile: true })
      const selfTimes = scriptSelfTimes(cpu)
      const scriptTotal = selfTimes.reduce((sum, [, ms]) => sum + ms, 0)
      console.log(
        `dashboard  (info) profiled load (rows in DOM at ${inDom.toFixed(0)}ms): /ui/*.js self time ${scriptTotal.toFixed(0)}ms, by function  ${selfTimes
          .slice(0, 6)
          .map(([name, ms]) => `${name}=${ms.toFixed(0)}ms`)
          .join('  ')}`,
      )
    }
    await stopServe(server.child)
    server = undefined
  }
} finally {
  await browser?.close()
  if (server !== undefined) await stopServe(server.child)
  await rm(home, { recursive: true, force: true })
}
exit()
