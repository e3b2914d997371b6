import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DURATION_TABLE } from '@lango/duration/table'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI } from './fixtures/lango-serve.js'

// ADR 0013 through the built `lango` CLI and `lango serve`: `lango cron add --timeout` reads the
// one table (a bare number there is seconds, as the CLI has always documented), and a lango.yaml
// duration without a unit is still milliseconds but warned about by `lango serve` and `lango doctor`.

const SECOND = 1000
const DAY = 86_400_000

let home: string
let server: ChildProcess | undefined
let url: string
let serverLog = ''

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

function lango(args: readonly string[]): Promise<Result> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, LANGO_HOME: home, LANGO_URL: url, LANGO_LOG_LEVEL: 'warn', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
  home = await mkdtemp(join(tmpdir(), 'lango-cli-durations-'))
  await writeFile(join(home, 'lango.yaml'), 'background:\n  task_timeout: 1800\n')
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
    env: { ...process.env, LANGO_HOME: home, LANGO_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  server = child
  url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk) => {
      serverLog += chunk
      const match = /^lango listening on (http:\/\/\S+)$/m.exec(serverLog)
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`lango serve exited ${code}: ${serverLog}`)))
  })
})

afterAll(async () => {
  if (server !== undefined && server.exitCode === null && server.signalCode === null) {
    const exited = new Promise((resolve) => server?.once('exit', resolve))
    server.kill('SIGTERM')
    await exited
  }
  await rm(home, { recursive: true, force: true })
})

describe('lango cron add --timeout reads the duration table', () => {
  it.concurrent.each(DURATION_TABLE.map((row, index) => ({ ...row, index })))('$input', async (row) => {
    // The CLI's documented form: a bare number is seconds (`timeout 30`); the rest is the table.
    const bare = /^\d+(?:\.\d+)?$/.test(row.input)
    const milliseconds = bare
      ? Math.round(Number(row.input) * SECOND)
      : 'milliseconds' in row
        ? row.milliseconds
        : undefined
    const result = await lango([
      'cron',
      'add',
      `cli-${row.index}`,
      '--schedule',
      '0 9 * * *',
      '--command',
      'true',
      `--timeout=${row.input}`,
      '--json',
    ])
    const output = `${result.stdout}${result.stderr}`
    if (milliseconds !== undefined && milliseconds >= SECOND && milliseconds <= DAY) {
      expect(result.code, output).toBe(0)
      expect(JSON.parse(result.stdout).job.timeout_ms).toBe(milliseconds)
    } else if (milliseconds !== undefined && milliseconds <= 7 * DAY) {
      expect(result.code, output).not.toBe(0)
      expect(output).toContain('timeout must be between 1s and 1d')
    } else {
      expect(result.code, output).toBe(2)
      expect(output).toContain(
        'expected a duration with a unit such as 30s, 5m or 1h30m, or a number of seconds',
      )
    }
  })
})

describe('a lango.yaml duration without a unit', () => {
  it('is logged by lango serve as deprecated, with what to write', () => {
    const line = serverLog.split('\n').find((each) => each.includes('configuration: deprecated form'))
    expect(line, serverLog).toBeDefined()
    expect(JSON.parse(line as string)).toMatchObject({
      key: 'background.task_timeout',
      line: 2,
      message: expect.stringContaining('(1800 = 1s800ms); write 1s800ms'),
    })
  })

  it('is a warning of lango doctor, which still passes', async () => {
    const result = await lango(['doctor', '--json'])
    const checks = JSON.parse(result.stdout).checks as Array<{
      name: string
      status: string
      message: string
    }>
    expect(checks.find((check) => check.name === 'config')).toMatchObject({
      status: 'warn',
      message: expect.stringContaining(
        'background.task_timeout (line 2): a number without a unit is read as milliseconds',
      ),
    })
  })
})
