import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'
import { type SeededJob, seedJobs } from './fixtures/seed-jobs.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

describe('GET /api/cron/jobs: paging, filters, sort and search (issue 26)', () => {
  let server: TestServer
  let seeded: SeededJob[]
  beforeAll(async () => {
    server = await startTestServer()
    seeded = await seedJobs(server, 60)
  })
  afterAll(async () => {
    await server?.dispose()
  })

  async function get(query: string): Promise<{ status: number; body: Json }> {
    const response = await server.request(`/api/cron/jobs${query}`)
    return { status: response.status, body: (await response.json()) as Json }
  }

  /** Every page of `query`, following next_cursor. */
  async function allPages(query: string): Promise<{ names: string[]; pages: number; totals: number[] }> {
    const names: string[] = []
    const totals: number[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const separator = query === '' ? '?' : '&'
      const { status, body } = await get(
        `?${query}${cursor === null ? '' : `${separator}cursor=${encodeURIComponent(cursor)}`}`,
      )
      expect(status).toBe(200)
      names.push(...body.jobs.map((job: Json) => job.name))
      totals.push(body.total)
      cursor = body.next_cursor
      pages += 1
    } while (cursor !== null && pages < 100)
    return { names, pages, totals }
  }

  it('answers as before without parameters: every job and a count, no cursor', async () => {
    const { status, body } = await get('')
    expect(status).toBe(200)
    expect(body.count).toBe(60)
    expect(body.jobs).toHaveLength(60)
    expect(body).not.toHaveProperty('next_cursor')
  })

  it('pages by name: pages do not overlap, add up to every job, and one job added meanwhile shifts nothing', async () => {
    const first = await get('?limit=25')
    expect(first.body).toMatchObject({ count: 25, total: 60 })
    expect(first.body.jobs[0].name).toBe('job-00')
    const { names, pages } = await allPages('limit=25')
    expect(pages).toBe(3)
    expect(names).toEqual(seeded.map((entry) => entry.job.name))
    // A cursor stays valid when a job sorting before it is created: the next page is unchanged.
    const second = await get(`?limit=25&cursor=${encodeURIComponent(first.body.next_cursor)}`)
    await seedJobs(server, 1, 'aaa')
    const again = await get(`?limit=25&cursor=${encodeURIComponent(first.body.next_cursor)}`)
    expect(again.body.jobs.map((job: Json) => job.name)).toEqual(
      second.body.jobs.map((job: Json) => job.name),
    )
    expect(again.body.total).toBe(61)
    await server.request('/api/cron/jobs/aaa-00', { method: 'DELETE' })
  })

  it('combines filters and search, and sorts by failures with stable keyset pages', async () => {
    const failing = seeded.filter((entry) => entry.failing).map((entry) => entry.job.name)
    expect((await allPages('failing=1&limit=3')).names).toEqual(failing)
    const failingPaused = seeded
      .filter((entry) => entry.failing && entry.paused)
      .map((entry) => entry.job.name)
    const both = await get('?failing=true&paused=1')
    expect(both.body.jobs.map((job: Json) => job.name)).toEqual(failingPaused)
    expect(both.body.total).toBe(failingPaused.length)
    const deliveryFailed = seeded.filter((entry) => entry.deliveryFailed).map((entry) => entry.job.name)
    expect((await get('?delivery_failed=1')).body.jobs.map((job: Json) => job.name)).toEqual(deliveryFailed)
    const berlinEnabled = seeded
      .filter((entry) => entry.job.timezone === 'Europe/Berlin' && !entry.paused)
      .map((entry) => entry.job.name)
    expect((await allPages('zone=Europe%2FBerlin&paused=0&kind=shell&limit=7')).names).toEqual(berlinEnabled)
    expect((await get('?q=JOB-4')).body.jobs.map((job: Json) => job.name)).toEqual(
      seeded.filter((entry) => entry.job.name.startsWith('job-4')).map((entry) => entry.job.name),
    )
    expect((await get('?status=failed')).body.total).toBe(failing.length)
    expect((await get('?status=never')).body.total).toBe(0)
    // By failures: the failing jobs first (by name among equals), then the rest; pages of 4 agree.
    const byFailures = await allPages('sort=failures&limit=4')
    expect(byFailures.names).toEqual([
      ...failing,
      ...seeded.map((e) => e.job.name).filter((n) => !failing.includes(n)),
    ])
    const byNextRun = await allPages('sort=next_run&limit=9')
    expect(byNextRun.names).toHaveLength(60)
    expect(new Set(byNextRun.names).size).toBe(60)
  })

  it('status=running lists the jobs with a run in progress; never, the jobs without an outcome yet', async () => {
    const created = await server.request('/api/cron/jobs', {
      json: {
        kind: 'shell',
        name: 'zz-sleeper',
        schedule_type: 'cron',
        schedule: '0 3 * * *',
        command: 'sleep 60',
      },
    })
    expect(created.status).toBe(200)
    expect((await get('?status=running')).body).toMatchObject({ total: 0, jobs: [] })
    const triggered = await server.request('/api/cron/jobs/zz-sleeper/trigger', { method: 'POST' })
    expect(triggered.status).toBe(200)
    const running = await until(async () => {
      const page = await get('?status=running')
      return page.body.total === 1 ? page.body : undefined
    })
    expect(running.jobs.map((job: Json) => job.name)).toEqual(['zz-sleeper'])
    expect((await get('?status=never')).body.jobs.map((job: Json) => job.name)).toEqual(['zz-sleeper'])
    expect((await get('?status=running&q=job')).body.total).toBe(0)
    // Removing the job cancels its run.
    expect((await server.request('/api/cron/jobs/zz-sleeper', { method: 'DELETE' })).status).toBe(200)
  })

  it('refuses a bad parameter with 400 and a message naming it', async () => {
    for (const [query, words] of [
      ['?limit=0', 'limit must be at least 1'],
      ['?limit=many', 'limit must be a number'],
      ['?status=broken', 'status must be one of'],
      ['?sort=age', 'sort must be one of name, next_run, last_run, failures'],
      ['?paused=maybe', 'paused must be true or false'],
      ['?cursor=not-a-cursor', 'cursor must be a next_cursor of an earlier page'],
      ['?kind=robot', 'kind must be ai or shell'],
      ['?status=interrupted', "to find interrupted runs, use cron_history's status filter"],
      ['?failng=1', 'failng: unknown query parameter'],
    ] as const) {
      const { status, body } = await get(query)
      expect({ query, status }).toEqual({ query, status: 400 })
      expect(body.error.message).toContain(words)
    }
    const page = await get('?sort=failures&limit=2')
    const mixed = await get(`?sort=name&cursor=${encodeURIComponent(page.body.next_cursor)}`)
    expect(mixed.status).toBe(400)
    expect(mixed.body.error.message).toContain('the cursor belongs to sort failures, not name')
  })
})
