import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@lango/vitest-config/wait-for'
import { Client, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const SERVER = join(dirname(fileURLToPath(import.meta.url)), 'server.mjs')

/** A stdio client transport that also keeps every line the server wrote to stdout. */
class RecordingStdioTransport implements Transport {
  readonly lines: string[] = []
  stderr = ''
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  #pending = ''

  constructor(readonly child: ChildProcessWithoutNullStreams) {}

  async start(): Promise<void> {
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()))
    this.child.stdout.on('data', (chunk: Buffer) => {
      this.#pending += chunk.toString()
      for (let end = this.#pending.indexOf('\n'); end >= 0; end = this.#pending.indexOf('\n')) {
        const line = this.#pending.slice(0, end)
        this.#pending = this.#pending.slice(end + 1)
        this.lines.push(line)
        try {
          this.onmessage?.(JSON.parse(line) as JSONRPCMessage)
        } catch (error) {
          this.onerror?.(error as Error)
        }
      }
    })
    // A last line without its newline is still output: it counts (and must be JSON-RPC too).
    this.child.stdout.once('end', () => {
      if (this.#pending !== '') this.lines.push(this.#pending)
      this.#pending = ''
    })
    this.child.once('exit', () => this.onclose?.())
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.child.stdin.write(`${JSON.stringify(message)}\n`)
  }

  async close(): Promise<void> {
    this.child.stdin.end()
  }
}

type Result = { structuredContent?: unknown; isError?: boolean; content: Array<{ text?: string }> }

let home: string
let child: ChildProcessWithoutNullStreams
let transport: RecordingStdioTransport
let client: Client
let exited: Promise<number | null>

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-mcp-host-'))
  child = spawn(process.execPath, [SERVER], {
    cwd: home,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANGO_HOME: join(home, '.lango') },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  transport = new RecordingStdioTransport(child)
  client = new Client({ name: 'mcp-host-test', version: '0.0.0' })
  await client.connect(transport)
})
afterAll(async () => {
  if (child.exitCode === null) child.kill('SIGKILL')
  await rm(home, { recursive: true, force: true })
})

const call = async (name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as Result

describe('examples/mcp-host: all tools over MCP stdio, real services on one SQLite file', () => {
  it('lists the 23 tools', async () => {
    const { tools } = await client.listTools()
    expect(tools).toHaveLength(23)
    // Waits stay under the 60 s hosts allow a call.
    const exec = tools.find((tool) => tool.name === 'exec')
    expect(exec?.inputSchema.properties?.timeout).toMatchObject({ maximum: 50 })
    const workflowRun = tools.find((tool) => tool.name === 'workflow_run')
    expect(workflowRun?.inputSchema.properties?.wait_seconds).toMatchObject({ maximum: 50 })
    expect(client.getInstructions()).toMatch(/## Automation[\s\S]*NEVER use `exec`/)
  })

  it('creates and triggers a shell cron job and reads its history', async () => {
    const created = await call('manage_cron_jobs', {
      action: 'create',
      name: 'nightly-echo',
      type: 'shell',
      scheduleType: 'cron',
      scheduleValue: '0 3 * * *',
      config: { command: 'echo cron-ran' },
    })
    expect(created.isError).toBeFalsy()
    const job = created.structuredContent as { id: string; type: string; scheduleValue: string }
    expect(job).toMatchObject({ type: 'shell', scheduleValue: '0 3 * * *', id: expect.any(String) })
    // Created over MCP without a target: deliveries go to the example's default, stderr.
    expect(created.structuredContent).toMatchObject({ deliverTo: ['stderr'] })
    expect(await call('manage_cron_jobs', { action: 'trigger', id: job.id })).toMatchObject({
      structuredContent: { ok: true, message: 'Job triggered' },
    })
    let entries: Array<{ status: string; result: string | null; trigger: string }> = []
    await waitFor(
      async () => {
        const history = await call('cron_history', { job_id: job.id })
        entries = (history.structuredContent as { entries: typeof entries }).entries
        return entries.some((entry) => entry.result !== null)
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    )
    expect(entries).toMatchObject([{ trigger: 'manual', result: expect.stringContaining('cron-ran') }])
    await waitFor(() => /\[stderr\][^\n]*nightly-echo/.test(transport.stderr), {
      timeoutMs: 20_000,
      intervalMs: 50,
    })
    expect(transport.stderr).toMatch(/\[stderr\][^\n]*nightly-echo[\s\S]*cron-ran/)
  })

  it('runs an inline workflow whose second step uses {{step.result}}', async () => {
    const yaml = [
      'name: greet',
      'steps:',
      '  - id: host',
      '    run: "echo web-01"',
      '  - id: greet',
      '    depends_on: [host]',
      '    run: echo hello {{host.result}}',
    ].join('\n')
    const result = await call('workflow_run', { yaml_content: yaml, wait_seconds: 20 })
    expect(result).toMatchObject({
      structuredContent: {
        status: 'completed',
        steps: [
          { step_id: 'host', status: 'completed', result: 'web-01' },
          { step_id: 'greet', status: 'completed', result: 'hello web-01' },
        ],
      },
    })
    // The run's result is delivered to the example's default target, stderr.
    await waitFor(() => /\[stderr\][^\n]*greet/.test(transport.stderr), { timeoutMs: 20_000, intervalMs: 50 })
    expect(transport.stderr).toMatch(/\[stderr\][^\n]*greet[\s\S]*hello web-01/)
  })

  it('runs exec, and refuses a lango command without running it', async () => {
    const ran = await call('exec', { command: 'echo from-exec; echo to-stderr >&2' })
    expect(ran).toMatchObject({
      structuredContent: { exit_code: 0, stdout: 'from-exec\n', stderr: 'to-stderr\n' },
    })
    expect(ran.isError).toBeFalsy()
    const blocked = await call('exec', { command: 'touch should-not-exist && lango cron list' })
    expect(blocked).toMatchObject({
      isError: true,
      structuredContent: { blocked: true, message: expect.any(String) },
    })
    expect((await call('exec', { command: 'ls' })).structuredContent).toMatchObject({
      stdout: expect.not.stringContaining('should-not-exist'),
    })
  })

  it('writes nothing but JSON-RPC to stdout and exits cleanly when the client closes', async () => {
    await client.close()
    expect(await exited).toBe(0)
    expect(transport.lines.length).toBeGreaterThan(5)
    for (const line of transport.lines) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' })
  })
})

describe('examples/mcp-host with a client that negotiates the 2026-07-28 protocol', () => {
  it('serves the modern era too: tools, calls, progress and errors', async () => {
    const modernHome = await mkdtemp(join(tmpdir(), 'lango-mcp-host-modern-'))
    const modern = new Client(
      { name: 'modern-client', version: '0.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    )
    const stdio = new StdioClientTransport({
      command: process.execPath,
      args: [SERVER],
      cwd: modernHome,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: modernHome,
        LANGO_HOME: join(modernHome, '.lango'),
      },
      stderr: 'pipe',
    })
    try {
      await modern.connect(stdio)
      expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28')
      expect((await modern.listTools()).tools).toHaveLength(23)
      const progress: unknown[] = []
      const run = (await modern.callTool(
        {
          name: 'workflow_run',
          arguments: {
            yaml_content: 'name: nap\nsteps:\n  - id: nap\n    run: "sleep 6; echo up"\n',
            wait_seconds: 20,
          },
        },
        { onprogress: (update) => progress.push(update) },
      )) as Result
      expect(run).toMatchObject({ structuredContent: { status: 'completed', steps: [{ result: 'up' }] } })
      // The start (progress 0), then at least one report while the step still runs: the server
      // reports every 5 s (the default), and the step takes 6.
      expect(progress[0]).toMatchObject({ progress: 0, message: expect.stringMatching(/started/) })
      expect(progress.slice(1)).toContainEqual(
        expect.objectContaining({ progress: expect.any(Number), message: '0 of 1 steps done; running: nap' }),
      )
      expect((progress.at(-1) as { progress: number }).progress).toBeGreaterThan(0)
      expect(await modern.callTool({ name: 'exec', arguments: { command: 'lango doctor' } })).toMatchObject({
        isError: true,
      })
    } finally {
      await modern.close()
      await rm(modernHome, { recursive: true, force: true })
    }
  })
})
