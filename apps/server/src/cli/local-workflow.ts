import Database from '@lango/better-sqlite3'
import { blockLangoExec, checkSecretPlacement, ensureOrphanReaper, type RefStore, run } from '@lango/exec'
import { type ShellRunner, WorkflowEngine, type WorkflowRunSnapshot } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import { Kysely, SqliteDialect } from 'kysely'
import { CliError } from './errors.js'

/** What an agent step of a local run fails with: the CLI has no model (issue 13 brings one). */
const NO_MODEL =
  'no model configured: agent (prompt) steps need the server with a model; run shell-only workflows locally'

/** Options of {@link runLocalWorkflow}. */
export interface LocalRunOptions {
  /** Working directory of shell steps. */
  readonly cwd: string
  /** Give up (and cancel the run) after this long; default the engine's run timeout (2 h). */
  readonly timeoutMs?: number | undefined
  /** Resolves `{{secret:NAME}}` in commands (the vault), when the workflow uses secrets. */
  readonly refStore?: RefStore | undefined
  /** Each step's end, as it happens (progress for people). */
  readonly onStep?: (step: { stepId: string; status: string; error?: string | null }) => void
  /** A step's or the run's delivery (`deliver_to`): a local run prints them, it sends nothing. */
  readonly onDelivery?: (target: string, text: string) => void
  /** Aborting cancels the run (Ctrl-C). */
  readonly signal?: AbortSignal
}

/**
 * Runs a workflow in this process, without a server: an engine on an in-memory SQLite database,
 * shell steps through `@lango/exec` behind the `lango` guard (the same runner the server uses),
 * agent steps failing with "no model configured". Returns the ended run.
 * @throws WorkflowError `WORKFLOW_INVALID` (with issues) when the YAML does not validate;
 *   CliError `CLI_WAIT_TIMEOUT` when `timeoutMs` passed (the run was cancelled).
 */
export async function runLocalWorkflow(
  source: string,
  options: LocalRunOptions,
): Promise<WorkflowRunSnapshot> {
  // Its steps end with this process, however it ends.
  ensureOrphanReaper()
  const database = new Database(':memory:')
  const db = new Kysely<WorkflowDatabase>({ dialect: new SqliteDialect({ database }) })
  const shellRunner: ShellRunner = {
    async run(request, { signal }) {
      const message = blockLangoExec(request.command, {
        automationAvailable: { cron: true, background: true, workflow: true },
      })
      if (message !== '') return { exitCode: null, stdout: '', stderr: '', blocked: true, message }
      return run(request.command, {
        cwd: request.cwd ?? options.cwd,
        timeoutMs: request.timeoutMs,
        signal,
        envSource: 'trusted',
        ...(options.refStore === undefined ? {} : { refStore: options.refStore }),
      })
    },
  }
  const engine = new WorkflowEngine({
    store: new SqliteWorkflowStore(db),
    shellRunner,
    agentRunner: { run: async () => Promise.reject(new Error(NO_MODEL)) },
    channelSender: {
      async send(target, text) {
        options.onDelivery?.(target, text)
      },
    },
    cwd: options.cwd,
    checkCommand: checkSecretPlacement,
    ...(options.timeoutMs === undefined ? {} : { runTimeoutMs: options.timeoutMs }),
  })
  const onAbort = () => {
    if (runId !== undefined) engine.cancelRun(runId).catch(() => undefined)
  }
  let runId: string | undefined
  try {
    await migrateWorkflow(db)
    await engine.start()
    engine.on('step:end', (event) =>
      options.onStep?.({ stepId: event.stepId, status: event.status, error: event.error ?? null }),
    )
    options.signal?.addEventListener('abort', onAbort, { once: true })
    ;({ runId } = await engine.startRun(source))
    const ended = await engine.waitForRun(runId)
    if (ended.status === 'pending' || ended.status === 'running') {
      await engine.cancelRun(runId).catch(() => undefined)
      throw new CliError('CLI_WAIT_TIMEOUT', 'the workflow did not end in time; it was cancelled')
    }
    return ended
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
    await engine.stop()
    await db.destroy()
  }
}
