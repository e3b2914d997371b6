import type { Kysely } from 'kysely'
import type { WorkflowEvents } from '../../src/events.js'
import type { AgentRunner, ChannelSender } from '../../src/ports.js'
import { SqliteWorkflowStore, type WorkflowDatabase } from '../../src/sqlite/index.js'
import { ChildProcessShellRunner } from '../../src/testing/child-process-shell-runner.js'
import { RecordingAgentRunner, RecordingChannelSender } from '../../src/testing/recording.js'
import { WorkflowEngine, type WorkflowEngineOptions } from '../../src/workflow-engine.js'
import { createTestDatabase, type TestDatabase } from './database.js'

/** One recorded event with the time it happened. */
interface RecordedEvent {
  readonly name: keyof WorkflowEvents
  readonly payload: WorkflowEvents[keyof WorkflowEvents]
  readonly at: number
}

export interface Harness {
  readonly database: TestDatabase
  readonly db: Kysely<WorkflowDatabase>
  readonly store: SqliteWorkflowStore
  readonly engine: WorkflowEngine
  readonly shell: ChildProcessShellRunner
  readonly agent: RecordingAgentRunner
  readonly sender: RecordingChannelSender
  readonly events: RecordedEvent[]
  /** A directory for marker files, also the shell's working directory. */
  readonly directory: string
  /** A second engine on the same database (the same Kysely, as apps/server would share it). */
  engineWith(options?: Partial<WorkflowEngineOptions>): WorkflowEngine
  cleanup(): Promise<void>
}

/** A started engine over a real SQLite file, a real `sh -c` runner and recording fakes. */
export async function createHarness(
  options: Partial<WorkflowEngineOptions> & {
    readonly agentRunner?: AgentRunner
    readonly channelSender?: ChannelSender
  } = {},
): Promise<Harness> {
  const database = await createTestDatabase()
  const store = new SqliteWorkflowStore(database.db)
  const shell = new ChildProcessShellRunner({ cwd: database.directory })
  const agent = new RecordingAgentRunner()
  const sender = new RecordingChannelSender({ failTargets: ['broken:1'] })
  const events: RecordedEvent[] = []
  const engines: WorkflowEngine[] = []
  const engineWith = (overrides: Partial<WorkflowEngineOptions> = {}) => {
    const engine = new WorkflowEngine({
      store,
      shellRunner: shell,
      agentRunner: agent,
      channelSender: sender,
      ...options,
      ...overrides,
    })
    engines.push(engine)
    return engine
  }
  const engine = engineWith()
  for (const name of [
    'run:start',
    'run:end',
    'step:start',
    'step:end',
    'run:error',
    'delivery:error',
  ] as const) {
    engine.on(name, (payload) => events.push({ name, payload, at: performance.now() }))
  }
  await engine.start()
  return {
    database,
    db: database.db,
    store,
    engine,
    shell,
    agent,
    sender,
    events,
    directory: database.directory,
    engineWith,
    async cleanup() {
      for (const each of engines) await each.stop().catch(() => {})
      await database.cleanup()
    },
  }
}

/** Steps of a stored run as `{ id: status }`. */
export async function stepStatuses(
  store: SqliteWorkflowStore,
  runId: string,
): Promise<Record<string, string>> {
  const steps = await store.listSteps(runId)
  return Object.fromEntries(steps.map((step) => [step.stepId, step.status]))
}

/** Resolves on the first event of that name matching `predicate`. */
export function nextEvent<E extends keyof WorkflowEvents>(
  engine: WorkflowEngine,
  name: E,
  predicate: (payload: WorkflowEvents[E]) => boolean = () => true,
): Promise<WorkflowEvents[E]> {
  return new Promise((resolve) => {
    const off = engine.on(name, (payload) => {
      if (!predicate(payload)) return
      off()
      resolve(payload)
    })
  })
}
