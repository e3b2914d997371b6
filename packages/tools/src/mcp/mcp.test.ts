import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BackgroundManager } from '@lango/background'
import { RecordingAgentRunner, RecordingChannelSender } from '@lango/background/testing'
import { CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { blockLangoExec, ProcessRegistry, run } from '@lango/exec'
import { nodePtyDriver } from '@lango/exec/pty'
import { buildAutomationPromptSection } from '@lango/prompts'
import { waitFor } from '@lango/vitest-config/wait-for'
import { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import { Client } from '@modelcontextprotocol/client'
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport, McpServer, type ServerContext } from '@modelcontextprotocol/server'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import * as v from 'valibot'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { abortProbe } from '../__fixtures__/abort-probe.js'
import { guardedShellRunner } from '../__fixtures__/shell-runner.js'
import type { ApprovalRequest } from '../approval.js'
import { createBackgroundTools } from '../background-tools.js'
import { createCronTools, createManageCronJobsTool } from '../cron-tools.js'
import { createExecTools } from '../exec-tools.js'
import { type AnyTool, defineTool } from '../tool.js'
import { createWorkflowTools } from '../workflow-tools.js'
import { type RegisterToolsOptions, registerTools } from './index.js'

let dir: string
let db: Kysely<CronDatabase & WorkflowDatabase>
let registry: ProcessRegistry
let cron: CronService
let engine: WorkflowEngine
let background: BackgroundManager
let agentRunner: RecordingAgentRunner
let tools: AnyTool[]
const closers: Array<() => Promise<void>> = []

const shellRunner = guardedShellRunner({ envSource: 'trusted' })

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-tools-mcp-'))
  db = new Kysely({ dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }) })
  await migrateCron(db)
  await migrateWorkflow(db)
  registry = new ProcessRegistry({ killGraceMs: 200, ptyDriver: nodePtyDriver() })
  cron = new CronService({ store: new SqliteCronStore(db), defaultTimezone: 'UTC' })
  await cron.start()
  engine = new WorkflowEngine({ store: new SqliteWorkflowStore(db), shellRunner })
  await engine.start()
  agentRunner = new RecordingAgentRunner()
  background = new BackgroundManager({
    agentRunner,
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
      // Resuming another creator's job, or one reporting to another chat: dangerous per call.
      cron_resume: { ...destroy, idempotentHint: true },
      cron_remove: { ...destroy, idempotentHint: true },
      cron_history: read,
      manage_cron_jobs: destroy,
      // Announcing to a chat other than the caller's own needs approval: dangerous per call.
      bg_submit: { ...destroy, openWorldHint: true },
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
      structuredContent: { error: { code: 'TOOL_DENIED', message: 'not approved: Execute: ⟦echo nope⟧' } },
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
      'Execute: ⟦echo nope⟧',
      'Execute: ⟦echo allowed⟧',
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

/** The paths of the `{}` subschemas (which accept any value) in a JSON Schema. */
function emptySubschemas(schema: unknown, path = ''): string[] {
  if (typeof schema !== 'object' || schema === null) return []
  if (!Array.isArray(schema) && Object.keys(schema).length === 0) return [path]
  return Object.entries(schema).flatMap(([key, value]) =>
    key === 'properties' || key === 'required' || key === 'enum'
      ? Object.entries(typeof value === 'object' && value !== null ? value : {}).flatMap(([name, item]) =>
          key === 'properties' ? emptySubschemas(item, `${path}.properties.${name}`) : [],
        )
      : emptySubschemas(value, `${path}.${key}`),
  )
}

/** A tool call as a host makes it: name and arguments in, the MCP result out. */
type Call = (name: string, args: Record<string, unknown>) => Promise<TextResult>

/**
 * Calls every tool at least once with a result that is not an error, through `call`, and returns
 * the results by tool name. Each client validates a non-error `structuredContent` against the
 * tool's `outputSchema` itself (it throws on a mismatch), and the server checks it before sending.
 */
async function callEveryTool(call: Call): Promise<Map<string, TextResult[]>> {
  const results = new Map<string, TextResult[]>()
  const record = async (name: string, args: Record<string, unknown>) => {
    const result = await call(name, args)
    results.set(name, [...(results.get(name) ?? []), result])
    return result
  }
  const ok = async (name: string, args: Record<string, unknown>) => {
    const result = await record(name, args)
    expect(result.isError, `${name}: ${textOf(result)}`).toBeFalsy()
    return result.structuredContent as Record<string, unknown>
  }

  // exec: a finished command, the guard's refusal (an isError payload), a pty session typed into.
  await ok('exec', { command: 'echo fits' })
  await record('exec', { command: 'lango cron list' })
  const started = await ok('exec_bg', {
    command: 'printf "name? "; read name; echo "hello $name"',
    pty: true,
  })
  const id = started.id as string
  await waitFor(async () => ((await ok('exec_status', { id })).output as string).includes('name?'))
  await ok('exec_write', { id, input: 'lango\r' })
  await waitFor(async () => (await ok('exec_status', { id })).status === 'exited')
  await ok('exec_stop', { id })

  // cron: a dry run, a job created and changed, a page, a run in the history, the seed tool's actions.
  const job = { name: 'nightly', schedule_type: 'cron', schedule: '30 2 * * *', prompt: 'Summarise' }
  await ok('cron_add', { ...job, dry_run: true })
  await ok('cron_add', job)
  await ok('cron_list', {})
  await ok('cron_list', { limit: 1, sort: 'next_run' })
  await ok('cron_pause', { id: 'nightly' })
  await ok('cron_resume', { id: 'nightly' })
  const shell = {
    action: 'create',
    name: 'echoer',
    type: 'shell',
    scheduleType: 'interval',
    scheduleValue: '1h',
    config: { command: 'echo hi' },
  }
  await ok('manage_cron_jobs', { ...shell, dry_run: true })
  await ok('manage_cron_jobs', shell)
  await ok('manage_cron_jobs', { action: 'update', id: 'echoer', config: { cwd: dir } })
  await ok('manage_cron_jobs', { action: 'get', id: 'echoer' })
  await ok('manage_cron_jobs', { action: 'list' })
  await record('manage_cron_jobs', { action: 'trigger', id: 'nightly' })
  await record('manage_cron_jobs', { action: 'get', id: 'nonexistent' })
  await waitFor(async () => ((await ok('cron_history', {})).entries as unknown[]).length > 0)
  await ok('cron_history', { job_id: 'nightly', limit: 5 })
  await ok('manage_cron_jobs', { action: 'delete', id: 'echoer' })
  await ok('cron_remove', { id: 'nightly' })

  // background: a task cancelled while it runs, one that finishes and is read.
  const first = await ok('bg_submit', { prompt: 'Wait for ever' })
  await waitFor(() => agentRunner.calls.length === 1)
  await ok('bg_status', { task_id: first.task_id })
  await ok('bg_cancel', { task_id: first.task_id })
  const second = await ok('bg_submit', { prompt: 'Answer' })
  await waitFor(() => agentRunner.calls.length === 2)
  agentRunner.calls[1]?.resolve('the answer')
  await waitFor(async () => (await ok('bg_status', { task_id: second.task_id })).status === 'done')
  await ok('bg_result', { task_id: second.task_id })
  await ok('bg_list', {})

  // workflow: saved, run, rerun from a step, listed, and a run cancelled.
  await ok('workflow_save', {
    name: 'greet',
    yaml_content: 'name: greet\nsteps:\n  - id: a\n    run: "echo hi"\n',
  })
  const run = await ok('workflow_run', { file_path: 'greet', wait_seconds: 20 })
  expect(run.status).toBe('completed')
  await ok('workflow_status', { run_id: run.run_id })
  await ok('workflow_rerun', { run_id: run.run_id, from_step: 'a', wait_seconds: 20 })
  const nap = await ok('workflow_run', {
    yaml_content: 'name: nap\nsteps:\n  - id: nap\n    run: "sleep 30"\n',
    wait_seconds: 0,
  })
  await ok('workflow_cancel', { run_id: nap.run_id })
  await ok('workflow_list', {})
  return results
}

describe('declared output (issue 24 item 6): every tool publishes an outputSchema its results fit', () => {
  it("lists each tool's outputSchema: its output's JSON Schema or a failure's { error }, with an object root", async () => {
    const client = await connect(tools)
    const listed = (await client.listTools()).tools
    expect(listed).toHaveLength(tools.length)
    const errorBranch = {
      type: 'object',
      properties: { error: { type: 'object', required: ['code', 'message'] } },
      required: ['error'],
    }
    for (const [index, tool] of listed.entries()) {
      const own = tools[index]?.outputJsonSchema as { anyOf?: unknown[] }
      const branches = own.anyOf ?? [own]
      expect(tool.outputSchema, tool.name).toMatchObject({
        type: 'object',
        anyOf: [...branches, errorBranch],
      })
      expect(tool.outputSchema?.anyOf, tool.name).toHaveLength(branches.length + 1)
    }
    const byName = new Map(listed.map((tool) => [tool.name, tool.outputSchema]))
    expect((byName.get('cron_history')?.anyOf as unknown[] | undefined)?.[0]).toMatchObject({
      type: 'object',
      required: ['entries', 'count', 'next_cursor'],
      additionalProperties: false,
      properties: {
        entries: { type: 'array', items: { required: expect.arrayContaining(['delivery_status']) } },
      },
    })
    // seed 002's answers, one branch each, then the failure's.
    expect(byName.get('manage_cron_jobs')?.anyOf).toHaveLength(6)
    // Portable (the MCP Inspector's --strict check): no subschema that constrains nothing ({}).
    for (const tool of listed) expect(emptySubschemas(tool.outputSchema), tool.name).toEqual([])
  })

  it.each([
    ['the SDK v2 client', 'v2'],
    ['the SDK 1.32 client', 'legacy'],
  ] as const)("every tool's results fit its outputSchema, as %s validates them", async (_label, kind) => {
    const server = new McpServer({ name: 'lango-test', version: '0.0.0' })
    registerTools(server, tools)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    await server.connect(serverSide)
    const client =
      kind === 'v2'
        ? new Client({ name: 'test-client', version: '0.0.0' })
        : new LegacyClient({ name: 'legacy-host', version: '1.32.2' })
    await client.connect(clientSide)
    closers.push(async () => {
      await client.close()
      await server.close()
    })
    // The clients validate against the listed schemas.
    await client.listTools()
    const results = await callEveryTool(
      async (name, args) => (await client.callTool({ name, arguments: args })) as TextResult,
    )
    const succeeded = [...results].filter(([, list]) => list.some((result) => result.isError !== true))
    expect(succeeded.map(([name]) => name).sort()).toEqual(tools.map((tool) => tool.name).sort())
    // The tool's own schema agrees, failures reported in the payload included (blocked, { error }).
    for (const [name, list] of results) {
      const tool = tools.find((candidate) => candidate.name === name) as AnyTool
      for (const result of list) {
        if (result.isError === true && tool.isFailure?.(result.structuredContent) !== true) continue
        expect(v.safeParse(tool.output, result.structuredContent).issues, name).toBeUndefined()
      }
    }
  })

  it('refuses a result that does not fit: the server answers with an error, never the result', async () => {
    const liar = defineTool({
      name: 'liar',
      title: 'Liar',
      description: 'Returns a count that is not a number.',
      safety: 'safe',
      parameters: v.strictObject({}),
      output: v.strictObject({ count: v.number() }),
      handler: async () => ({ count: 'three' }) as unknown as { count: number },
    })
    const client = await connect([liar])
    const result = (await client.callTool({ name: 'liar', arguments: {} })) as TextResult
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toBeUndefined()
    expect(textOf(result)).toMatch(/Output validation error: Invalid structured content for tool liar/)
  })
})
