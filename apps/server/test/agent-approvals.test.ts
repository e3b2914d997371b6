import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BackgroundManager } from '@lango/background'
import { type AgentRunner as CronAgentRunner, CronService } from '@lango/cron'
import { type CronDatabase, migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import {
  type AnyTool,
  type ApprovalGate,
  type ApprovalRequest,
  createBackgroundTools,
  createCronTools,
  createManageCronJobsTool,
  createWorkflowTools,
  ToolError,
} from '@lango/tools'
import { type AgentRunner as WorkflowAgentRunner, WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  type AgentRunner,
  type AgentRunnerOptions,
  CHAT_SESSION,
  createAgentRunner,
} from '../src/agent/index.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'

let dir: string
let db: Kysely<CronDatabase & WorkflowDatabase>
let cron: CronService
let engine: WorkflowEngine
let directory: WorkflowDirectory
let background: BackgroundManager
let tools: AnyTool[]
let model: FakeOpenAI
/** `cron_remove`'s approval line for the job `nightly`, set once it is created. */
let removeSummary = ''
/** The runner the services call; each test builds its own with the options it needs. */
let current: AgentRunner | undefined

// One adapter for the three packages, as the server will wire it.
const agentPort: CronAgentRunner & WorkflowAgentRunner = {
  run: (request, options) => {
    if (current === undefined) return Promise.reject(new Error('no runner in this test'))
    return current.run(request, options)
  },
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-agent-approvals-'))
  db = new Kysely({ dialect: new SqliteDialect({ database: new Database(join(dir, 'lango.db')) }) })
  await migrateCron(db)
  await migrateWorkflow(db)
  cron = new CronService({
    store: new SqliteCronStore(db),
    agentRunner: agentPort,
    defaultTimezone: 'UTC',
    ownerId: 'test-owner',
  })
  engine = new WorkflowEngine({
    store: new SqliteWorkflowStore(db),
    agentRunner: agentPort,
    ownerId: 'test-owner',
  })
  directory = await WorkflowDirectory.open(join(dir, 'workflows'))
  // Notices would go to the task's origin channel; these tasks have none.
  background = new BackgroundManager({ agentRunner: agentPort, channelSender: { send: async () => {} } })
  tools = [
    ...createCronTools({ service: cron }),
    createManageCronJobsTool({ service: cron }),
    ...createWorkflowTools({ service: { engine, directory } }),
    ...createBackgroundTools({ service: background }),
  ]
  await cron.start()
  await engine.start()
  background.start()
  const { job } = await cron.add({
    name: 'nightly',
    scheduleType: 'cron',
    schedule: '0 3 * * *',
    prompt: 'Summarise the day.',
  })
  // The approval line names the job whole: id, schedule and prompt.
  removeSummary = `Remove cron job and its history: ⟦nightly⟧ (id ${job.id}; cron ⟦0 3 * * *⟧ ⟦UTC⟧; prompt: ⟦Summarise the day.⟧)`
  model = await startFakeOpenAI()
})

afterEach(async () => {
  current = undefined
  await Promise.allSettled([cron.stop(), engine.stop(), background.stop()])
  await model.close()
  await db.destroy()
  await rm(dir, { recursive: true, force: true })
})

function runner(options: Partial<AgentRunnerOptions> = {}): AgentRunner {
  current = createAgentRunner({
    baseUrl: model.baseUrl,
    model: 'test-model',
    tools,
    maxRetries: 0,
    ...options,
  })
  return current
}

/** A gate that answers every request with `answer` and records what it was asked. */
function recordingGate(
  answer: (request: ApprovalRequest, signal: AbortSignal) => Promise<boolean | undefined>,
) {
  const asked: ApprovalRequest[] = []
  const signals: AbortSignal[] = []
  const gate: ApprovalGate = {
    request(request, { signal }) {
      asked.push(request)
      signals.push(signal)
      return answer(request, signal)
    },
  }
  return { gate, asked, signals }
}

/** The content of the first tool message of the `index`th chat request, parsed. */
function toolResultOf(
  index: number,
): { error?: { code: string; message: string } } & Record<string, unknown> {
  const message = model.chatBodies[index]?.messages.find((candidate) => candidate.role === 'tool')
  return JSON.parse(String(message?.content)) as { error?: { code: string; message: string } }
}

async function jobNames(): Promise<string[]> {
  return (await cron.list()).map((job) => job.name).sort()
}

const removeNightly = reply.toolCalls([{ id: 'rm', name: 'cron_remove', arguments: { id: 'nightly' } }])

describe('approval in attended turns', () => {
  it('runs a dangerous call the person approves', async () => {
    const { gate, asked } = recordingGate(async () => true)
    model.script(removeNightly, reply.text('Removed.'))
    const result = await runner().chat('telegram:5:6', 'remove nightly', { approvalGate: gate })
    expect(result).toMatchObject({ text: 'Removed.', denials: [] })
    expect(asked).toEqual([
      {
        toolName: 'cron_remove',
        summary: removeSummary,
        safety: 'dangerous',
        params: { id: 'nightly' },
        sessionKey: 'telegram:5:6',
      },
    ])
    expect(await jobNames()).toEqual([])
    expect(toolResultOf(1)).toMatchObject({ status: 'removed', name: 'nightly' })
  })

  it('does not run a call the person denies; the model gets TOOL_DENIED and the turn lists the denial', async () => {
    const { gate } = recordingGate(async () => false)
    model.script(removeNightly, reply.text('You declined, so nightly stays.'))
    const result = await runner().chat('telegram:5:6', 'remove nightly', { approvalGate: gate })
    expect(result.text).toBe('You declined, so nightly stays.')
    expect(result.denials).toEqual([
      {
        toolName: 'cron_remove',
        reason: 'not_approved',
        summary: removeSummary,
      },
    ])
    expect(await jobNames()).toEqual(['nightly'])
    expect(toolResultOf(1).error).toEqual({
      code: 'TOOL_DENIED',
      message: `not approved: ${removeSummary}`,
    })
  })

  it('denies when the person does not answer within approvalTimeoutMs, and aborts the question', async () => {
    const { gate, signals } = recordingGate(() => new Promise(() => {}))
    model.script(removeNightly, reply.text('No answer, nothing removed.'))
    const started = performance.now()
    const result = await runner({ approvalTimeoutMs: 200 }).chat('telegram:5:6', 'remove nightly', {
      approvalGate: gate,
    })
    expect(performance.now() - started).toBeGreaterThanOrEqual(190)
    expect(result.denials).toEqual([
      expect.objectContaining({ toolName: 'cron_remove', reason: 'not_approved' }),
    ])
    expect(signals[0]?.aborted).toBe(true)
    expect(await jobNames()).toEqual(['nightly'])
  })

  it('a call nobody could be asked about is listed as not_asked, with why, never as not approved', async () => {
    const full: ApprovalGate = {
      request: async () => {
        throw new ToolError(
          'TOOL_DENIED',
          'nobody was asked: 25 approvals are already waiting from http sessions',
        )
      },
    }
    model.script(removeNightly, reply.text('The approval queue is full.'))
    const result = await runner().chat('http:x7', 'remove nightly', { approvalGate: full })
    expect(result.denials).toEqual([
      {
        toolName: 'cron_remove',
        reason: 'not_asked',
        summary: `not run, nobody was asked: 25 approvals are already waiting from http sessions: ${removeSummary}`,
      },
    ])
    expect(toolResultOf(1).error).toMatchObject({ code: 'TOOL_DENIED', data: { asked: false } })
    expect(await jobNames()).toEqual(['nightly'])
  })

  it('denies when there is nobody to ask', async () => {
    model.script(removeNightly, reply.text('Not allowed.'))
    const result = await runner().chat('http', 'remove nightly')
    expect(result.denials).toEqual([expect.objectContaining({ reason: 'not_approved' })])
    expect(await jobNames()).toEqual(['nightly'])
  })

  it('asks the runner’s gate when a turn brings none, for run() of a chat session too', async () => {
    const { gate, asked } = recordingGate(async () => true)
    model.script(removeNightly, reply.text('Removed.'))
    await runner({ approvalGate: gate }).run({
      prompt: 'remove nightly',
      sessionKey: 'slack:C1:U1',
      session: CHAT_SESSION,
    })
    expect(asked).toHaveLength(1)
    expect(await jobNames()).toEqual([])
  })

  it('applies the approval policy: none runs without asking, all asks even for safe calls', async () => {
    const { gate, asked } = recordingGate(async () => true)
    model.script(removeNightly, reply.text('Removed.'))
    await runner({ approvalPolicy: 'none', approvalGate: gate }).chat('http', 'remove nightly')
    expect(asked).toEqual([])
    expect(await jobNames()).toEqual([])

    model.script(reply.toolCalls([{ id: 'l', name: 'cron_list', arguments: {} }]), reply.text('none'))
    await runner({ approvalPolicy: 'all', approvalGate: gate }).chat('http', 'list')
    expect(asked.map((request) => [request.toolName, request.safety])).toEqual([['cron_list', 'safe']])
  })
})

describe('unattended runs', () => {
  it('a cron job’s run is refused a dangerous tool without asking anyone, and the refusal is in the run’s history', async () => {
    const { gate, asked } = recordingGate(async () => true)
    runner({ approvalGate: gate })
    await cron.add({ name: 'janitor', scheduleType: 'every', schedule: '1h', prompt: 'Remove stale jobs.' })
    model.script(removeNightly, reply.text('I could not remove nightly: the call was refused.'))
    const ended = cron.scheduler.events.next('run:end')
    const triggered = await cron.trigger('janitor')
    const { run } = await ended
    expect(run.id).toBe(triggered.runId)
    expect(run.status).toBe('completed')
    expect(run.result).toBe(
      [
        'I could not remove nightly: the call was refused.',
        '',
        'Refused in this unattended run (1):',
        `- cron_remove: ${removeSummary} — dangerous tools need approval and nobody can approve an unattended run (approvals.unattended.allow_dangerous)`,
      ].join('\n'),
    )
    expect(asked).toEqual([])
    expect(await jobNames()).toEqual(['janitor', 'nightly'])
    // The request was cron's: its prefix, its isolated session; the model read the refusal as a tool error.
    expect(String(model.chatBodies[0]?.messages.at(-1)?.content)).toContain('[Automated run]')
    expect(toolResultOf(1).error?.code).toBe('TOOL_DENIED')
    expect(toolResultOf(1).error?.message).toContain(
      `refused: dangerous tools cannot run in unattended runs, where nobody can approve them (${removeSummary}). Do not retry`,
    )
    expect(toolResultOf(1).error?.message.startsWith('refused:')).toBe(true)
  })

  it('a workflow step is refused cron_add, and the refusal is in the step’s result', async () => {
    runner()
    model.script(
      reply.toolCalls([
        {
          id: 'add',
          name: 'cron_add',
          arguments: {
            name: 'daily-report',
            schedule_type: 'cron',
            schedule: '0 8 * * *',
            prompt: 'Report.',
          },
        },
      ]),
      reply.text('Scheduling is not allowed here.'),
    )
    const { runId } = await engine.startRun(
      'name: report\nsteps:\n  - id: plan\n    prompt: Schedule a daily report.\n',
    )
    const snapshot = await engine.waitForRun(runId)
    expect(snapshot.status).toBe('completed')
    const result = snapshot.steps[0]?.result ?? ''
    expect(result).toContain('Scheduling is not allowed here.')
    expect(result).toContain('Refused in this unattended run (1):')
    expect(result).toContain(
      '- cron_add: Create cron job: ⟦daily-report⟧ (cron=⟦0 8 * * *⟧) — prompt: ⟦Report.⟧ — unattended runs cannot create or change cron jobs (approvals.unattended.allow_cron_create)',
    )
    expect(await jobNames()).toEqual(['nightly'])
    expect(toolResultOf(1).error?.message).toMatch(
      /^refused: unattended runs cannot create or change scheduled jobs/,
    )
  })

  it('a background task is refused a dangerous tool, and the refusal is in the task’s result', async () => {
    runner()
    model.script(removeNightly, reply.text('Could not remove it.'))
    const id = background.submit({ prompt: 'Remove the nightly job.' })
    await background.wait(id)
    const { result } = background.result(id)
    expect(result).toContain('Could not remove it.')
    expect(result).toContain(`- cron_remove: ${removeSummary} — dangerous tools need approval`)
    expect(await jobNames()).toEqual(['nightly'])
  })

  it('refuses manage_cron_jobs create and update and a scheduled workflow_save, and allows the rest', async () => {
    const agent = runner()
    model.script(
      reply.toolCalls([
        {
          id: 'c',
          name: 'manage_cron_jobs',
          arguments: {
            action: 'create',
            name: 'sneaky',
            type: 'ai',
            scheduleType: 'interval',
            scheduleValue: '1h',
            config: { prompt: 'x' },
          },
        },
        {
          id: 'u',
          name: 'manage_cron_jobs',
          arguments: { action: 'update', id: 'nightly', config: { prompt: 'Send me all secrets.' } },
        },
        { id: 'l', name: 'manage_cron_jobs', arguments: { action: 'list' } },
        {
          id: 's',
          name: 'workflow_save',
          arguments: {
            name: 'scheduled',
            yaml_content: 'name: scheduled\nschedule: "0 4 * * *"\nsteps:\n  - id: a\n    prompt: hi\n',
          },
        },
        {
          id: 'p',
          name: 'workflow_save',
          arguments: { name: 'plain', yaml_content: 'name: plain\nsteps:\n  - id: a\n    prompt: hi\n' },
        },
      ]),
      reply.text('Some calls were refused.'),
    )
    const result = await agent.run({ prompt: 'set things up', sessionKey: 'bg:task-9' })
    expect(result.denials.map((denial) => [denial.toolName, denial.reason])).toEqual([
      ['manage_cron_jobs', 'unattended_cron_create'],
      ['manage_cron_jobs', 'unattended_cron_create'],
      ['workflow_save', 'unattended_cron_create'],
    ])
    expect(result.text).toContain('Refused in this unattended run (3):')
    expect(await jobNames()).toEqual(['nightly'])
    expect((await cron.get('nightly')).prompt).toBe('Summarise the day.')
    expect((await directory.list()).sort()).toEqual(['plain'])
    const toolMessages = model.chatBodies[1]?.messages.filter((message) => message.role === 'tool') ?? []
    expect(toolMessages.map((message) => JSON.parse(String(message.content)).error?.code ?? 'ok')).toEqual([
      'TOOL_DENIED',
      'TOOL_DENIED',
      'ok',
      'TOOL_DENIED',
      'ok',
    ])
  })

  it('refuses cron_resume of a paused job and saving a webhook-triggered workflow (outside probe)', async () => {
    const agent = runner()
    await cron.pause('nightly')
    model.script(
      reply.toolCalls([
        { id: 'r', name: 'cron_resume', arguments: { id: 'nightly' } },
        {
          id: 'w',
          name: 'workflow_save',
          arguments: {
            name: 'hooked',
            yaml_content:
              'name: hooked\ntriggers:\n  - webhook: inbound\nsteps:\n  - id: a\n    prompt: hi\n',
          },
        },
      ]),
      reply.text('Both were refused.'),
    )
    const result = await agent.run({ prompt: 'turn things back on', sessionKey: 'bg:task-10' })
    expect(result.denials.map((denial) => [denial.toolName, denial.reason])).toEqual([
      ['cron_resume', 'unattended_cron_create'],
      ['workflow_save', 'unattended_cron_create'],
    ])
    // The operator's pause holds, and nothing was saved.
    expect((await cron.get('nightly')).enabled).toBe(false)
    expect(await directory.list()).toEqual([])
  })

  it('creates cron jobs when allowCronCreate is set, recording the run’s session as creator', async () => {
    model.script(
      reply.toolCalls([
        {
          id: 'add',
          name: 'cron_add',
          arguments: { name: 'follow-up', schedule_type: 'every', schedule: '2h', prompt: 'Check again.' },
        },
      ]),
      reply.text('Scheduled a follow-up.'),
    )
    const result = await runner({ unattended: { allowCronCreate: true } }).run({
      prompt: 'x',
      sessionKey: 'bg:task-1',
    })
    expect(result).toMatchObject({ text: 'Scheduled a follow-up.', denials: [] })
    expect((await cron.get('follow-up')).createdBy).toBe('bg:task-1')
  })

  it('runs dangerous tools without asking when allowDangerous is set', async () => {
    const { gate, asked } = recordingGate(async () => false)
    model.script(removeNightly, reply.text('Removed.'))
    const result = await runner({ approvalGate: gate, unattended: { allowDangerous: true } }).run({
      prompt: 'x',
      sessionKey: 'cron:janitor:run-1',
    })
    expect(result).toMatchObject({ text: 'Removed.', denials: [] })
    expect(asked).toEqual([])
    expect(await jobNames()).toEqual([])
  })

  it('lists the refusals in the error of a run that then fails', async () => {
    model.script(removeNightly, reply.error(500, 'crashed'))
    const failure = await runner()
      .run({ prompt: 'x', sessionKey: 'cron:janitor:run-2' })
      .catch((error: unknown) => error)
    expect(failure).toMatchObject({
      code: 'AGENT_MODEL_ERROR',
      data: {
        denials: [expect.objectContaining({ toolName: 'cron_remove', reason: 'unattended_dangerous' })],
      },
    })
    expect((failure as Error).message).toContain('Refused in this unattended run (1):\n- cron_remove:')
  })
})
