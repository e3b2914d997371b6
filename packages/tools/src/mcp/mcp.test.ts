import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BackgroundManager } from '@lango/background'
import { RecordingAgentRunner, RecordingChannelSender } from '@lango/background/testing'
import { CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { blockLangoExec, ProcessRegistry, run } from '@lango/exec'
import { buildAutomationPromptSection } from '@lango/prompts'
import { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import { Client } from '@modelcontextprotocol/client'
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport, McpServer, type ServerContext } from '@modelcontextprotocol/server'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { abortProbe } from '../__fixtures__/abort-probe.js'
import { guardedShellRunner } from '../__fixtures__/shell-runner.js'
import type { ApprovalRequest } from '../approval.js'
import { createBackgroundTools } from '../background-tools.js'
import { createCronTools, createManageCronJobsTool } from '../cron-tools.js'
import { createExecTools } from '../exec-tools.js'
import type { AnyTool } from '../tool.js'
import { createWorkflowTools } from '../workflow-tools.js'
import { type RegisterToolsOptions, registerTools } from './index.js'

let dir: string
let db: Kysely<CronDatabase & WorkflowDatabase>
let registry: ProcessRegistry
let cron: CronService
let engine: WorkflowEngine
let background: BackgroundManager
let tools: AnyTool[]
const closers: Array<() => Promise<void>> = []

const shellRunner = guardedShellRunner({ envSource: 'trusted' })

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-tools-mcp-'))
  db = new Kysely({ dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }) })
  await migrateCron(db)
  await migrateWorkflow(db)
  registry = new ProcessRegistry({ killGraceMs: 200 })
  cron = new CronService({ store: new SqliteCronStore(db), defaultTimezone: 'UTC' })
  await cron.start()
  engine = new WorkflowEngine({ store: new SqliteWorkflowStore(db), shellRunner })
  await engine.start()
  background = new BackgroundManager({
    agentRunner: new RecordingAgentRunner(),
    channelSender: new RecordingChannelSender(),
  })
  background.start()
  const directory = await WorkflowDirectory.open(join(dir, 'workflows'))
  tools = [
    ...createExecTools({ backend: { run, registry, blockLangoExec } }),
    ...createCronTools({ service: cron }),
    createManageCronJobsTool({ service: cron }),
    ...createBackgroundTools({ service: background }),
    ...createWorkflowTools({ service: { engine, directory }, progressIntervalSeconds: 0.1 }),
  ]
})
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
  await background.stop()
  await engine.stop()
  await cron.stop()
  await registry.stop()
  await db.destroy()
  await rm(dir, { recursive: true, force: true })
})

/** A v2 client connected in memory to a server with `list` registered. */
async function connect(list: readonly AnyTool[], options?: RegisterToolsOptions): Promise<Client> {
  // The server's instructions come from @lango/prompts (STACK.md): the text the agent's prompt has.
  const instructions = buildAutomationPromptSection({ cron: true, background: true, workflow: true })
  const server = new McpServer({ name: 'lango-test', version: '0.0.0' }, { instructions })
  registerTools(server, list, options)
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = new Client({ name: 'test-client', version: '0.0.0' })
  await client.connect(clientSide)
  closers.push(async () => {
    await client.close()
    await server.close()
  })
  return client
}

type TextResult = {
  content: Array<{ type: string; text?: string }>
  structuredContent?: unknown
  isError?: boolean
}
const textOf = (result: unknown) => (result as TextResult).content[0]?.text as string

describe('registerTools on an MCP SDK v2 server (STACK.md, MCP)', () => {
  it('lists the tools in the order given, with annotations from their safety and JSON Schemas', async () => {
    const client = await connect(tools)
    const listed = (await client.listTools()).tools
    expect(listed.map((tool) => tool.name)).toEqual(tools.map((tool) => tool.name))
    expect(listed).toHaveLength(23)
    const byName = new Map(listed.map((tool) => [tool.name, tool]))
    expect(byName.get('cron_list')).toMatchObject({
      title: 'List cron jobs',
      annotations: { title: 'List cron jobs', readOnlyHint: true, openWorldHint: false },
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    })
    expect(byName.get('cron_list')?.annotations).not.toHaveProperty('destructiveHint')
    expect(byName.get('cron_pause')?.annotations).toEqual({
      title: 'Pause cron job',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    })
    expect(byName.get('exec')?.annotations).toEqual({
      title: 'Run shell command',
      readOnlyHint: false,
      destructiveHint: true,
      openWorldHint: true,
    })
    expect(byName.get('manage_cron_jobs')?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
    })
    const openWorld = listed
      .filter((tool) => tool.annotations?.openWorldHint === true)
      .map((tool) => tool.name)
    expect(openWorld.sort()).toEqual(['bg_submit', 'exec', 'exec_bg'])
    for (const tool of listed) expect(tool.annotations?.title, tool.name).toBe(tool.title)
    expect(byName.get('exec')?.inputSchema).toMatchObject({
      type: 'object',
      required: ['command'],
      additionalProperties: false,
      properties: { timeout: { type: 'number', description: expect.stringMatching(/seconds/i) } },
    })
    expect(client.getInstructions()).toMatch(/NEVER use `exec` or `exec_bg` to run ANY `lango` CLI command/)
  })

  it('annotates every tool with its worst case: a call that can be raised to dangerous is destructive (STACK.md)', async () => {
    const client = await connect(tools)
    const listed = (await client.listTools()).tools
    const read = { readOnlyHint: true }
    const change = { readOnlyHint: false, destructiveHint: false }
    const destroy = { readOnlyHint: false, destructiveHint: true }
    const expected: Record<string, Record<string, boolean>> = {
      exec: { ...destroy, openWorldHint: true },
      exec_bg: { ...destroy, openWorldHint: true },
      exec_status: read,
      exec_write: destroy,
      exec_stop: { ...destroy, idempotentHint: true },
      // A prompt with a secret reference is persisted for later runs (CRON-5): dangerous per call.
      cron_add: { ...destroy, idempotentHint: true },
      cron_list: read,
      cron_pause: { ...change, idempotentHint: true },
      cron_resume: { ...change, idempotentHint: true },
      cron_remove: { ...destroy, idempotentHint: true },
      cron_history: read,
      manage_cron_jobs: destroy,
      bg_submit: { ...change, openWorldHint: true },
      bg_status: read,
      bg_list: read,
      bg_result: read,
      bg_cancel: { ...change, idempotentHint: true },
      // Inline run steps or secret references (WF-10), or a workspace file with them: dangerous per call.
      workflow_run: destroy,
      workflow_status: read,
      workflow_list: read,
      workflow_cancel: { ...change, idempotentHint: true },
      // Its run steps that run again, or secret references (WF-10): dangerous per call.
      workflow_rerun: destroy,
      workflow_save: destroy,
    }
    expect(Object.fromEntries(listed.map((tool) => [tool.name, tool.annotations]))).toEqual(
      Object.fromEntries(
        listed.map((tool) => [
          tool.name,
          { title: tool.title, openWorldHint: false, ...expected[tool.name] },
        ]),
      ),
    )
    expect(listed.map((tool) => tool.name).sort()).toEqual(Object.keys(expected).sort())
  })

  it('returns structuredContent equal to the text JSON on success, without a second approval by default', async () => {
    const client = await connect(tools)
    const result = (await client.callTool({
      name: 'exec',
      arguments: { command: 'echo over-mcp' },
    })) as TextResult
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual(JSON.parse(textOf(result)))
    expect(result.structuredContent).toMatchObject({ exit_code: 0, stdout: 'over-mcp\n', timed_out: false })
    const list = (await client.callTool({ name: 'cron_list', arguments: {} })) as TextResult
    expect(list).toMatchObject({ structuredContent: { jobs: [], count: 0 } })
  })

  it('marks every failure isError: invalid parameters, service errors, blocked commands, seed-shaped errors', async () => {
    const client = await connect(tools)
    const call = async (name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args })) as TextResult

    const invalid = await call('exec', { command: '', timeout: 'soon' })
    expect(invalid.isError).toBe(true)
    expect(invalid.structuredContent).toMatchObject({ error: { code: 'TOOL_INVALID_PARAMETERS' } })
    expect(textOf(invalid)).toMatch(/command.*timeout/)

    const blocked = await call('exec', { command: 'lango cron list' })
    expect(blocked.isError).toBe(true)
    expect(blocked.structuredContent).toEqual({ blocked: true, message: expect.stringContaining('cron_add') })

    const notFound = await call('manage_cron_jobs', { action: 'get', id: 'nonexistent' })
    expect(notFound.isError).toBe(true)
    expect(notFound.structuredContent).toEqual({ error: 'Job not found' })
    expect(JSON.parse(textOf(notFound))).toEqual({ error: 'Job not found' })

    const missing = await call('manage_cron_jobs', { action: 'create', type: 'shell' })
    expect(missing).toMatchObject({ isError: true, structuredContent: { error: 'name is required' } })

    const invalidWorkflow = await call('workflow_run', {
      yaml_content: 'name: bad\nsteps:\n  - { id: a, run: x, prompt: y }\n',
    })
    expect(invalidWorkflow).toMatchObject({
      isError: true,
      structuredContent: {
        error: {
          code: 'TOOL_FAILED',
          reason: 'WORKFLOW_INVALID',
          issues: [
            { path: 'steps[0]', message: 'a step has either prompt or run, not both', line: 3, column: 5 },
          ],
          data: { issueCount: 1 },
        },
      },
    })
    expect(JSON.parse(textOf(invalidWorkflow))).toEqual(invalidWorkflow.structuredContent)

    const failed = await call('workflow_status', { run_id: 'nope' })
    expect(failed).toMatchObject({ isError: true, structuredContent: { error: { code: 'TOOL_FAILED' } } })
    for (const result of [invalid, blocked, notFound, invalidWorkflow, failed])
      expect(textOf(result)).not.toMatch(/\n\s+at /)
  })

  it('asks the host-supplied approval hook when configured, with the MCP request context', async () => {
    const asked: Array<{ request: ApprovalRequest; context: ServerContext }> = []
    const client = await connect(tools, {
      approval: {
        policy: 'dangerous',
        async request(request, { context }) {
          asked.push({ request, context })
          return request.summary.includes('allowed')
        },
      },
    })
    const denied = (await client.callTool({
      name: 'exec',
      arguments: { command: 'echo nope' },
    })) as TextResult
    expect(denied).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'TOOL_DENIED', message: 'not approved: Execute: echo nope' } },
    })
    const approved = (await client.callTool({
      name: 'exec',
      arguments: { command: 'echo allowed' },
    })) as TextResult
    expect(approved).toMatchObject({ structuredContent: { stdout: 'allowed\n' } })
    // Safe calls and blocked commands never reach the hook.
    await client.callTool({ name: 'cron_list', arguments: {} })
    await client.callTool({ name: 'exec', arguments: { command: 'lango bg list' } })
    expect(asked.map(({ request }) => request.summary)).toEqual([
      'Execute: echo nope',
      'Execute: echo allowed',
    ])
    expect(asked[0]?.request.sessionKey).toBe('mcp')
    expect(asked[0]?.context.mcpReq.method).toBe('tools/call')
  })

  it("wires the client's cancellation to the tool's signal", async () => {
    const { tool: probe, running, aborted: sawAbort } = abortProbe()
    const client = await connect([probe])
    const controller = new AbortController()
    const call = client.callTool({ name: 'probe', arguments: {} }, { signal: controller.signal })
    await running
    controller.abort(new Error('user pressed stop'))
    await expect(call).rejects.toThrow()
    await sawAbort
  })

  it('sends progress while workflow_run waits; a cancelled wait leaves the run going', async () => {
    const client = await connect(tools)
    const yaml = 'name: nap\nsteps:\n  - id: nap\n    run: "sleep 0.8; echo rested"\n'
    const progress: Array<{ progress: number; total?: number; message?: string }> = []
    const done = (await client.callTool(
      { name: 'workflow_run', arguments: { yaml_content: yaml, wait_seconds: 20 } },
      { onprogress: (update) => progress.push(update) },
    )) as TextResult
    expect(done).toMatchObject({ structuredContent: { status: 'completed', steps: [{ result: 'rested' }] } })
    expect(progress.length).toBeGreaterThan(2)
    expect(progress[0]).toMatchObject({ progress: 0, total: 20, message: expect.stringMatching(/started/) })
    expect(progress.at(-1)).toMatchObject({ message: '0 of 1 steps done; running: nap' })

    const controller = new AbortController()
    let updates = 0
    const waiting = client.callTool(
      { name: 'workflow_run', arguments: { yaml_content: yaml, wait_seconds: 20 } },
      {
        signal: controller.signal,
        onprogress: () => {
          updates += 1
          if (updates === 2) controller.abort()
        },
      },
    )
    await expect(waiting).rejects.toThrow()
    const runs = (await client.callTool({ name: 'workflow_list', arguments: {} })) as TextResult
    const latest = (runs.structuredContent as { runs: Array<{ run_id: string; status: string }> }).runs[0]
    expect(latest?.status).toBe('running')
    expect((await engine.waitForRun(latest?.run_id as string, { timeoutMs: 10_000 })).status).toBe(
      'completed',
    )
  })

  it('refuses two tools of one name', () => {
    const server = new McpServer({ name: 'dup', version: '0.0.0' })
    expect(() => registerTools(server, [tools[0] as AnyTool, tools[0] as AnyTool])).toThrow(
      /two tools are named exec/,
    )
  })
})

describe('an MCP SDK 1.32 client (older hosts)', () => {
  it('lists and calls the tools of a v2 server', async () => {
    const server = new McpServer({ name: 'lango-test', version: '0.0.0' })
    registerTools(server, tools)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await server.connect(serverSide)
    const client = new LegacyClient({ name: 'legacy-host', version: '1.32.2' })
    await client.connect(clientSide)
    closers.push(async () => {
      await client.close()
      await server.close()
    })
    const listed = await client.listTools()
    expect(listed.tools.map((tool) => tool.name)).toEqual(tools.map((tool) => tool.name))
    expect(listed.tools.find((tool) => tool.name === 'exec_status')?.annotations).toMatchObject({
      readOnlyHint: true,
    })
    const result = await client.callTool({ name: 'exec', arguments: { command: 'echo legacy' } })
    expect(result.structuredContent).toMatchObject({ stdout: 'legacy\n' })
    const blocked = await client.callTool({ name: 'exec', arguments: { command: 'lango doctor' } })
    expect(blocked.isError).toBe(true)
  })
})
