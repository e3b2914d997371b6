import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLI,
  type LangoMcp,
  langoEnv,
  NOISY_PRELOAD,
  startLangoMcp,
  type ToolResult,
} from './fixtures/mcp-stdio-client.js'

/** Every tool, in the order `tools/list` gives them (the app's order: exec, cron, background, workflow, secrets). */
const TOOLS = [
  'exec',
  'exec_bg',
  'exec_status',
  'exec_write',
  'exec_stop',
  'cron_add',
  'cron_list',
  'cron_pause',
  'cron_resume',
  'cron_remove',
  'cron_history',
  'manage_cron_jobs',
  'bg_submit',
  'bg_status',
  'bg_list',
  'bg_result',
  'bg_cancel',
  'workflow_run',
  'workflow_status',
  'workflow_list',
  'workflow_cancel',
  'workflow_rerun',
  'workflow_save',
  'secrets_list',
]

/** True while a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Every line the server wrote to stdout, each parsed: they must all be JSON-RPC 2.0 messages. */
function expectOnlyJsonRpc(lines: readonly string[]): void {
  expect(lines.length).toBeGreaterThan(0)
  for (const line of lines) {
    let message: unknown
    expect(() => {
      message = JSON.parse(line)
    }, line).not.toThrow()
    expect(message, line).toMatchObject({ jsonrpc: '2.0' })
  }
}

describe('lango mcp (the built CLI) over stdio', () => {
  let lango: LangoMcp
  let backgroundPid: number | undefined
  beforeAll(async () => {
    lango = await startLangoMcp({ preload: NOISY_PRELOAD })
  })
  afterAll(async () => {
    if (lango?.child.exitCode === null) lango.child.kill('SIGKILL')
    if (lango !== undefined) await rm(lango.home, { recursive: true, force: true })
  })

  it('lists every tool in a fixed order, each with a title, annotations from its safety and an outputSchema', async () => {
    const { tools } = await lango.client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(TOOLS)
    expect((await lango.client.listTools()).tools.map((tool) => tool.name)).toEqual(TOOLS)
    for (const tool of tools) {
      expect(tool.title, tool.name).toEqual(expect.any(String))
      expect(tool.annotations?.title, tool.name).toBe(tool.title)
      expect(tool.annotations?.readOnlyHint, tool.name).toEqual(expect.any(Boolean))
      expect(tool.annotations?.openWorldHint, tool.name).toEqual(expect.any(Boolean))
      expect(tool.outputSchema?.type, tool.name).toBe('object')
    }
    expect(tools.find((tool) => tool.name === 'secrets_list')?.outputSchema?.anyOf).toContainEqual(
      expect.objectContaining({ required: ['secrets', 'count'] }),
    )
    const byName = new Map(tools.map((tool) => [tool.name, tool.annotations]))
    expect(byName.get('cron_list')).toMatchObject({ readOnlyHint: true })
    expect(byName.get('exec')).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      openWorldHint: true,
    })
    expect(byName.get('manage_cron_jobs')).toMatchObject({ destructiveHint: true })
    expect(lango.client.getServerVersion()).toMatchObject({ name: 'lango' })
    expect(lango.client.getInstructions()).toMatch(/## Automation/)
  })

  it('creates, lists, pauses, resumes, triggers and removes a shell cron job, and shows its history', async () => {
    const created = await lango.call('manage_cron_jobs', {
      action: 'create',
      name: 'stdio-echo',
      type: 'shell',
      scheduleType: 'cron',
      scheduleValue: '0 3 * * *',
      config: { command: 'echo cron-ran' },
    })
    expect(created.isError).toBeFalsy()
    const job = created.structuredContent as { id: string }
    expect(job).toMatchObject({ id: expect.any(String), name: 'stdio-echo', type: 'shell', enabled: true })
    const listed = await lango.call('manage_cron_jobs', { action: 'list' })
    expect(JSON.stringify(listed.structuredContent)).toContain('stdio-echo')

    const paused = await lango.call('manage_cron_jobs', { action: 'update', id: job.id, enabled: false })
    expect(paused.structuredContent).toMatchObject({ enabled: false })
    expect(
      (await lango.call('manage_cron_jobs', { action: 'get', id: job.id })).structuredContent,
    ).toMatchObject({
      enabled: false,
    })
    const resumed = await lango.call('manage_cron_jobs', { action: 'update', id: job.id, enabled: true })
    expect(resumed.structuredContent).toMatchObject({ enabled: true })

    expect(await lango.call('manage_cron_jobs', { action: 'trigger', id: job.id })).toMatchObject({
      structuredContent: { ok: true },
    })
    let entries: Array<{ status: string; result: string | null; trigger: string }> = []
    await waitFor(
      async () => {
        const history = await lango.call('cron_history', { job_id: job.id })
        entries = (history.structuredContent as { entries: typeof entries }).entries
        return entries.some((entry) => entry.result !== null)
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    )
    expect(entries).toMatchObject([{ trigger: 'manual', result: expect.stringContaining('cron-ran') }])

    const removed = await lango.call('manage_cron_jobs', { action: 'delete', id: job.id })
    expect(removed.isError).toBeFalsy()
    expect(
      JSON.stringify((await lango.call('manage_cron_jobs', { action: 'list' })).structuredContent),
    ).not.toContain('stdio-echo')
  })

  it('runs a workflow with shell steps, the second using the first one’s result', async () => {
    const yaml = [
      'name: greet',
      'steps:',
      '  - id: host',
      '    run: "echo web-01"',
      '  - id: greet',
      '    depends_on: [host]',
      '    run: echo hello {{host.result}}',
    ].join('\n')
    const result = await lango.call('workflow_run', { yaml_content: yaml, wait_seconds: 20 })
    expect(result).toMatchObject({
      structuredContent: {
        status: 'completed',
        steps: [
          { step_id: 'host', status: 'completed', result: 'web-01' },
          { step_id: 'greet', status: 'completed', result: 'hello web-01' },
        ],
      },
    })
  })

  it('runs exec and exec_bg with their output in the results, never on the protocol stream', async () => {
    const ran = await lango.call('exec', { command: 'echo hi; echo to-stderr >&2' })
    expect(ran.structuredContent).toMatchObject({ exit_code: 0, stdout: 'hi\n', stderr: 'to-stderr\n' })
    const started = await lango.call('exec_bg', { command: 'echo bg-hi; echo bg-err >&2; sleep 60' })
    expect(started.isError).toBeFalsy()
    const { id, pid } = started.structuredContent as { id: string; pid: number }
    backgroundPid = pid
    let status: ToolResult | undefined
    await waitFor(
      async () => {
        status = await lango.call('exec_status', { id })
        return String(status.structuredContent?.output).includes('bg-err')
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    )
    expect(status?.structuredContent).toMatchObject({
      status: 'running',
      output: expect.stringContaining('bg-hi'),
    })
    expect(alive(pid)).toBe(true)
    const stdout = lango.transport.lines.join('\n')
    expect(stdout.split('\n').filter((line) => /^(hi|bg-hi|bg-err|to-stderr)$/.test(line))).toEqual([])
  })

  it('sends what the process writes to stdout outside the protocol to stderr', async () => {
    lango.child.kill('SIGUSR2')
    await waitFor(() => lango.transport.stderr.includes('noise from process.stdout.write'), {
      timeoutMs: 30_000,
      intervalMs: 50,
    })
    for (const noise of [
      'noise from console.log',
      'noise from console.info',
      'noise from process.stdout.write',
    ])
      expect(lango.transport.stderr).toContain(noise)
    // The session goes on after it.
    expect((await lango.call('cron_list', {})).isError).toBeFalsy()
    expect(lango.transport.lines.join('\n')).not.toContain('noise')
  })

  it('answers a line that is not a JSON-RPC message with its JSON-RPC error, and the session goes on', async () => {
    const before = lango.transport.lines.length
    lango.child.stdin.write('this is not json\n')
    lango.child.stdin.write('[1,2]\n')
    lango.child.stdin.write('{"jsonrpc":"1.0","id":7,"method":"ping"}\n')
    lango.child.stdin.write(`${'['.repeat(100)}${']'.repeat(100)}\n`)
    lango.child.stdin.write(Buffer.from([0x7b, 0xff, 0x7d, 0x0a]))
    lango.child.stdin.write('\r\n')
    const errors = () =>
      lango.transport.lines
        .slice(before)
        .map((line) => JSON.parse(line) as { error?: { code: number; message: string }; id?: unknown })
        .filter((message) => message.error !== undefined)
    await waitFor(() => errors().length >= 5, { timeoutMs: 30_000, intervalMs: 20 })
    expect(errors()).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringContaining('not JSON') } },
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: -32600, message: expect.stringContaining('one JSON object') },
      },
      {
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32600, message: expect.stringContaining('"jsonrpc": "2.0"') },
      },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringContaining('levels deep') } },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringContaining('not UTF-8') } },
    ])
    expect(lango.transport.stderr).toMatch(/"msg":"mcp stdio line refused"/)
    expect((await lango.call('cron_list', {})).isError).toBeFalsy()
  })

  it('writes only JSON-RPC to stdout, and stops everything and exits 0 when the client closes stdin', async () => {
    await lango.client.close()
    expect(await lango.exited).toBe(0)
    expectOnlyJsonRpc(lango.transport.lines)
    expect(lango.transport.stderr).toMatch(/"reason":"stdin closed"[^\n]*"msg":"mcp session ended"/)
    expect(lango.transport.stderr).toMatch(/"msg":"server stopped"/)
    // Logs are JSON lines on stderr, as is the noise the guard moved there.
    expect(backgroundPid).toEqual(expect.any(Number))
    await waitFor(() => !alive(backgroundPid as number), { timeoutMs: 30_000, intervalMs: 50 })
    expect(alive(backgroundPid as number)).toBe(false)
  })
})

describe('lango mcp with approvals.mcp_policy: dangerous', () => {
  const yaml = 'approvals:\n  mcp_policy: dangerous\n'
  const started: LangoMcp[] = []
  afterAll(async () => {
    for (const lango of started) {
      if (lango.child.exitCode === null) lango.child.kill('SIGKILL')
      await rm(lango.home, { recursive: true, force: true })
    }
  })

  it('asks a client with form elicitation (2025 protocol): accept runs the call, decline denies it', async () => {
    const answers = ['accept', 'decline']
    const asked: string[] = []
    const lango = await startLangoMcp({
      yaml,
      client: { capabilities: { elicitation: { form: {} } } },
      beforeConnect: (client) =>
        client.setRequestHandler('elicitation/create', async (request) => {
          asked.push(String(request.params.message))
          return answers.shift() === 'accept'
            ? { action: 'accept', content: { approve: true } }
            : { action: 'decline' }
        }),
    })
    started.push(lango)
    // Safe calls are not asked about.
    expect((await lango.call('cron_list', {})).isError).toBeFalsy()
    expect(asked).toEqual([])
    const ran = await lango.call('exec', { command: 'echo approved-over-stdio; touch made-once-approved' })
    expect(ran.structuredContent).toMatchObject({ exit_code: 0, stdout: 'approved-over-stdio\n' })
    expect(existsSync(join(lango.home, 'made-once-approved'))).toBe(true)
    expect(asked).toHaveLength(1)
    expect(asked[0]).toContain('Execute: ⟦echo approved-over-stdio; touch made-once-approved⟧')
    const denied = await lango.call('exec', { command: 'touch never-made' })
    expect(denied).toMatchObject({
      isError: true,
      structuredContent: {
        error: { code: 'TOOL_DENIED', message: expect.stringContaining('touch never-made') },
      },
    })
    expect(asked).toHaveLength(2)
    // Commands run in the server's working directory, the temp home: nothing was made there.
    expect(existsSync(join(lango.home, 'never-made'))).toBe(false)
    await lango.client.close()
    expect(await lango.exited).toBe(0)
    expectOnlyJsonRpc(lango.transport.lines)
  })

  it('returns a pending approval to a client without forms, saying how to answer it; SIGTERM exits 0', async () => {
    const lango = await startLangoMcp({ yaml })
    started.push(lango)
    const pending = await lango.call('exec', { command: 'echo never' })
    expect(pending).toMatchObject({
      isError: true,
      structuredContent: {
        error: {
          code: 'SERVER_APPROVAL_PENDING',
          message: expect.stringContaining('lango approvals approve'),
        },
        approval: { status: 'pending', tool: 'exec', summary: 'Execute: ⟦echo never⟧' },
      },
    })
    expect((await lango.call('cron_list', {})).isError).toBeFalsy()
    lango.child.kill('SIGTERM')
    expect(await lango.exited).toBe(0)
    expect(lango.transport.stderr).toMatch(/"reason":"SIGTERM"/)
    expectOnlyJsonRpc(lango.transport.lines)
  })
})

/** Every file under `directory`, recursively. */
async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true })
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name))
}

describe('lango mcp with a secret from the vault', () => {
  const value = 'sk-live-4f9c2a7e1b3d5f60'
  let home: string
  afterAll(async () => {
    if (home !== undefined) await rm(home, { recursive: true, force: true })
  })

  it('runs commands with {{secret:NAME}}; the value is in no response, log line or file under the home', async () => {
    home = await mkdtemp(join(tmpdir(), 'lango-mcp-secret-'))
    const env = langoEnv(home, { LANGO_PASSPHRASE: 'correct horse battery staple' })
    const set = spawnSync(process.execPath, [CLI, 'secrets', 'set', 'API_KEY'], {
      env,
      input: `${value}\n`,
      cwd: home,
    })
    expect(set.status, set.stderr.toString()).toBe(0)

    const lango = await startLangoMcp({ home, env: { LANGO_PASSPHRASE: 'correct horse battery staple' } })
    try {
      const listed = await lango.call('secrets_list', {})
      expect(JSON.stringify(listed.structuredContent)).toContain('{{secret:API_KEY}}')
      const ran = await lango.call('exec', {
        command:
          'test "$(printf %s {{secret:API_KEY}} | wc -c)" -eq 24 && echo length-ok; echo {{secret:API_KEY}}',
      })
      expect(ran.structuredContent).toMatchObject({
        exit_code: 0,
        stdout: expect.stringContaining('length-ok'),
      })
      expect(String(ran.structuredContent?.stdout)).toContain('[secret:API_KEY]')

      const created = await lango.call('manage_cron_jobs', {
        action: 'create',
        name: 'uses-secret',
        type: 'shell',
        scheduleType: 'cron',
        scheduleValue: '0 3 * * *',
        config: { command: 'echo key={{secret:API_KEY}}' },
      })
      const job = created.structuredContent as { id: string }
      await lango.call('manage_cron_jobs', { action: 'trigger', id: job.id })
      let history: ToolResult | undefined
      await waitFor(
        async () => {
          history = await lango.call('cron_history', { job_id: job.id })
          return JSON.stringify(history.structuredContent).includes('key=')
        },
        { timeoutMs: 30_000, intervalMs: 50 },
      )
      expect(JSON.stringify(history?.structuredContent)).toContain('key=[secret:API_KEY]')
    } finally {
      await lango.client.close()
    }
    expect(await lango.exited).toBe(0)
    expectOnlyJsonRpc(lango.transport.lines)
    expect(lango.transport.lines.join('\n')).not.toContain(value)
    expect(lango.transport.stderr).not.toContain(value)
    for (const file of await filesUnder(home))
      expect((await readFile(file)).includes(value), file).toBe(false)
  })
})

describe('lango mcp with a client that negotiates the 2026-07-28 protocol', () => {
  it('serves the modern era over stdio: tools, a call, an approval form', async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-mcp-modern-'))
    await mkdir(join(home, '.lango'), { recursive: true })
    await writeFile(join(home, '.lango', 'lango.yaml'), 'approvals:\n  mcp_policy: dangerous\n')
    const client = new Client(
      { name: 'modern-client', version: '0.0.0' },
      { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } },
    )
    const asked: string[] = []
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(String(request.params.message))
      return { action: 'accept', content: { approve: true } }
    })
    const stdio = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      cwd: home,
      env: langoEnv(home),
      stderr: 'pipe',
    })
    try {
      await client.connect(stdio)
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28')
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(TOOLS)
      const ran = (await client.callTool({
        name: 'exec',
        arguments: { command: 'echo modern' },
      })) as ToolResult
      expect(ran.structuredContent).toMatchObject({ exit_code: 0, stdout: 'modern\n' })
      expect(asked).toEqual([expect.stringContaining('Execute: ⟦echo modern⟧')])
    } finally {
      await client.close()
      await rm(home, { recursive: true, force: true })
    }
  })
})
