import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DURATION_TABLE, type DurationCase } from '@lango/duration/table'
import { Hono } from 'hono'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config/load.js'
import { registerUiRoutes } from '../src/ui/index.js'
import { type DashboardIntervals, loadDashboardIntervals } from './fixtures/dashboard-intervals.js'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// ADR 0013: one duration grammar, and one table every entry point must read the same way. A
// reading outside an entry point's range is answered with that range's error; a text that is not a
// duration is refused with a typed error naming the accepted forms. Each test here goes through a
// public surface of the server: the tool API (what agents and MCP clients call), the operator route,
// lango.yaml, and the dashboard's script.

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

const SECOND = 1000
const MINUTE = 60 * SECOND
const DAY = 24 * 60 * MINUTE
/** A job's run timeout: 1 s to 24 h. */
const TIMEOUT_RANGE = [SECOND, DAY] as const
const FORMS = /a number with a unit \(ms, s, m, h, d or w\)/

function inRange(
  row: DurationCase,
  [min, max]: readonly [number, number],
): row is DurationCase & { milliseconds: number } {
  return 'milliseconds' in row && row.milliseconds >= min && row.milliseconds <= max
}

describe('the duration table through the server', () => {
  let server: TestServer
  let sequence = 0
  beforeAll(async () => {
    // No approvals: manage_cron_jobs is dangerous, and this is about reading its parameters.
    server = await startTestServer((config) => ({
      ...config,
      approvals: { ...config.approvals, policy: 'none' },
    }))
  })
  afterAll(async () => {
    await server?.dispose()
  })
  afterEach(async () => {
    // Jobs made through the tools count against one creator's cap (50).
    for (const job of await server.app.cron.list()) await server.app.cron.remove(job.id)
  })

  async function call(path: string, body: Json): Promise<{ status: number; body: Json }> {
    const response = await server.request(path, { json: body })
    return { status: response.status, body: (await response.json()) as Json }
  }

  /** The error's code (the tool's own, under TOOL_FAILED) and message. */
  function errorOf(answer: { body: Json }): { code?: string; message?: string } {
    const error = answer.body.error ?? {}
    return { code: error.reason ?? error.code, message: error.message }
  }

  /** A text over 32 characters: cut by the parameter's length limit before it is read. */
  const TOO_LONG = /length must be at most 32 \(got \d+\)|at most 64 characters/

  it.each(DURATION_TABLE)('cron_add timeout $input', async (row) => {
    const name = `timeout-${++sequence}`
    const answer = await call('/api/tools/cron_add', {
      name,
      schedule_type: 'cron',
      schedule: '0 9 * * *',
      prompt: 'report',
      timeout: row.input,
    })
    if (inRange(row, TIMEOUT_RANGE)) {
      expect(answer.body.result?.job?.timeout_ms, JSON.stringify(answer.body)).toBe(row.milliseconds)
    } else {
      const tooLong = 'problem' in row && row.problem === 'too-long'
      expect(errorOf(answer).code, JSON.stringify(answer.body)).toBe(
        tooLong ? 'TOOL_INVALID_PARAMETERS' : 'CRON_INVALID_INPUT',
      )
      expect(errorOf(answer).message).toMatch(
        'milliseconds' in row ? /timeout must be between 1s and 1d/ : tooLong ? TOO_LONG : FORMS,
      )
    }
  })

  it('cron_add reads a JSON number of seconds as seconds, as its description says', async () => {
    const answer = await call('/api/tools/cron_add', {
      name: 'seconds',
      schedule_type: 'cron',
      schedule: '0 9 * * *',
      prompt: 'report',
      timeout: 600,
    })
    expect(answer.body.result.job.timeout_ms).toBe(600_000)
  })

  it('cron_add refuses timeout "600" instead of running the job with a 600 ms limit (issue 21, item 13)', async () => {
    const answer = await call('/api/tools/cron_add', {
      name: 'bare',
      schedule_type: 'cron',
      schedule: '0 9 * * *',
      prompt: 'report',
      timeout: '600',
    })
    expect(errorOf(answer)).toMatchObject({
      code: 'CRON_INVALID_INPUT',
      message: expect.stringContaining(
        'timeout has no unit: write "600s" for seconds or "600ms" for milliseconds',
      ),
    })
    expect(
      (await call('/api/tools/cron_list', {})).body.result.jobs.map((job: Json) => job.name),
    ).not.toContain('bare')
  })

  it.each(DURATION_TABLE)('cron_add every $input', async (row) => {
    const name = `every-${++sequence}`
    const answer = await call('/api/tools/cron_add', {
      name,
      schedule_type: 'every',
      schedule: row.input,
      prompt: 'p',
    })
    if (inRange(row, [MINUTE, Number.MAX_SAFE_INTEGER])) {
      const [first, second] = answer.body.result?.next_runs ?? []
      expect(Date.parse(second?.utc) - Date.parse(first?.utc), JSON.stringify(answer.body)).toBe(
        row.milliseconds,
      )
    } else {
      expect(errorOf(answer).code).toBe(
        'milliseconds' in row ? 'CRON_INTERVAL_TOO_SHORT' : 'CRON_INVALID_SCHEDULE',
      )
      if (!('milliseconds' in row)) expect(errorOf(answer).message).toMatch(FORMS)
    }
  })

  it.each(DURATION_TABLE)('manage_cron_jobs interval $input', async (row) => {
    const name = `managed-${++sequence}`
    const answer = await call('/api/tools/manage_cron_jobs', {
      action: 'create',
      name,
      type: 'ai',
      scheduleType: 'interval',
      scheduleValue: row.input,
      config: { prompt: 'p' },
    })
    if (inRange(row, [MINUTE, Number.MAX_SAFE_INTEGER])) {
      expect(answer.body.result?.scheduleType, JSON.stringify(answer.body)).toBe('interval')
      const job = (await call('/api/tools/cron_list', {})).body.result.jobs.find(
        (each: Json) => each.name === name,
      )
      const next = await server.app.cron.nextRuns(job.id, 2)
      expect(Date.parse(next[1]?.utc ?? '') - Date.parse(next[0]?.utc ?? '')).toBe(row.milliseconds)
    } else {
      expect(answer.body.result?.error ?? errorOf(answer).message, JSON.stringify(answer.body)).toMatch(
        'milliseconds' in row ? /below the minimum/ : FORMS,
      )
    }
  })

  it.each(DURATION_TABLE)('POST /api/cron/jobs timeout $input', async (row) => {
    const name = `operator-${++sequence}`
    const answer = await call('/api/cron/jobs', {
      kind: 'shell',
      name,
      schedule_type: 'cron',
      schedule: '0 9 * * *',
      command: 'true',
      timeout: row.input,
    })
    if (inRange(row, TIMEOUT_RANGE)) {
      expect(answer.body.job?.timeout_ms, JSON.stringify(answer.body)).toBe(row.milliseconds)
    } else {
      expect(answer.status, JSON.stringify(answer.body)).toBeGreaterThanOrEqual(400)
      expect(errorOf(answer).message).toMatch(
        'milliseconds' in row
          ? /timeout must be between 1s and 1d/
          : row.problem === 'too-long'
            ? TOO_LONG
            : FORMS,
      )
    }
  })

  it('exec takes no duration text: its timeout is a number of seconds, and a text is refused, never read', async () => {
    for (const timeout of ['600', '10m']) {
      const answer = await call('/api/tools/exec', { command: 'true', timeout })
      expect(answer.status, JSON.stringify(answer.body)).toBe(400)
      expect(JSON.stringify(answer.body)).toContain('timeout must be a number of seconds')
    }
  })
})

describe('the duration table in lango.yaml', () => {
  let home: string
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'lango-durations-'))
  })
  afterAll(async () => {
    await rm(home, { recursive: true, force: true })
  })

  async function load(yaml: string) {
    await writeFile(join(home, 'lango.yaml'), yaml)
    return loadConfig({ env: { LANGO_HOME: home }, cwd: home, home })
  }

  /** background.task_timeout: 1 s to 7 d. */
  const RANGE = [SECOND, 7 * DAY] as const

  it.each(DURATION_TABLE)('background.task_timeout $input', async (row) => {
    const loading = load(`background:\n  task_timeout: ${JSON.stringify(row.input)}\n`)
    if (inRange(row, RANGE)) {
      const config = await loading
      expect(config.background.taskTimeoutMs).toBe(row.milliseconds)
      expect(config.warnings).toEqual([])
      return
    }
    const legacy = 'problem' in row && /^\d+$/.test(row.input)
    if (legacy && Number(row.input) >= RANGE[0]) {
      // lango.yaml read a bare number as milliseconds before ADR 0013: it still does, with a warning.
      const config = await loading
      expect(config.background.taskTimeoutMs).toBe(Number(row.input))
      expect(config.warnings).toEqual([
        expect.objectContaining({
          key: 'background.task_timeout',
          line: 2,
          message: expect.stringMatching(/deprecated/),
        }),
      ])
      return
    }
    const error = await loading.then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(ConfigError.is(error)).toBe(true)
    expect((error as ConfigError).issues).toEqual([
      expect.objectContaining({
        key: 'background.task_timeout',
        message: expect.stringMatching(
          /^expected a duration from 1s to 7d: a number with a unit \(ms, s, m, h, d or w\)/,
        ),
      }),
    ])
  })

  it('reads a bare YAML number as milliseconds, as it always did, and says what to write instead', async () => {
    const config = await load('background:\n  task_timeout: 1800\nexec: { timeout: 45000 }\n')
    expect(config.background.taskTimeoutMs).toBe(1800)
    expect(config.exec.timeoutMs).toBe(45_000)
    expect(config.warnings).toEqual([
      {
        key: 'background.task_timeout',
        file: join(home, 'lango.yaml'),
        line: 2,
        column: 17,
        message:
          'a number without a unit is read as milliseconds (1800 = 1s800ms); write 1s800ms: a duration without a unit is deprecated and will be refused (ADR 0013)',
      },
      expect.objectContaining({
        key: 'exec.timeout',
        message: expect.stringContaining('(45000 = 45s); write 45s'),
      }),
    ])
  })
})

describe("the dashboard's reading of intervals", () => {
  let readDuration: DashboardIntervals['readDuration']
  let describeEvery: DashboardIntervals['describeEvery']
  beforeAll(async () => {
    const http = new Hono()
    registerUiRoutes(http, { tokenRequired: false })
    ;({ readDuration, describeEvery } = await loadDashboardIntervals(async (path) => {
      const response = await http.request(path)
      expect(response.status, path).toBe(200)
      return response.text()
    }))
  })

  it.each(DURATION_TABLE)('$input', (row) => {
    const reading = readDuration(row.input)
    if ('milliseconds' in row) {
      expect(reading).toEqual({ ok: true, milliseconds: row.milliseconds })
      expect(describeEvery(row.input)).toMatch(/^every \w/)
    } else {
      expect(reading).toEqual({ ok: false, problem: row.problem })
    }
  })

  it('puts intervals in words, stored bare numbers (milliseconds) included', () => {
    expect(describeEvery('5m')).toBe('every 5 minutes')
    expect(describeEvery('1m')).toBe('every minute')
    expect(describeEvery('1.5h')).toBe('every 1 hour 30 minutes')
    expect(describeEvery('300000')).toBe('every 5 minutes')
    expect(describeEvery('2w')).toBe('every 2 weeks')
    expect(describeEvery('soon')).toBe('')
  })
})
