// Runs daily-report.flow.yaml with @lango/workflow: a temporary SQLite file, a ShellRunner
// over @lango/exec, and a channel that prints every delivery (the `log` target of the file
// included). Needs `pnpm build` first.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blockLangoExec, run } from '@lango/exec'
import { WorkflowEngine } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore } from '@lango/workflow/sqlite'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'

/**
 * The ShellRunner port over @lango/exec: the CLI guard first (a refused command is reported as
 * blocked, and its step fails with the guard's message), then a filtered environment and process groups.
 */
const shellRunner = {
  async run(request, { signal }) {
    const message = blockLangoExec(request.command, { automationAvailable: true })
    if (message !== '') return { exitCode: null, stdout: '', stderr: '', blocked: true, message }
    return run(request.command, {
      timeoutMs: request.timeoutMs,
      signal,
      ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
    })
  },
}

/** Prints what would go to a chat. */
const channelSender = {
  async send(target, text, { signal }) {
    signal.throwIfAborted()
    console.log(`\n── delivered to ${target} ──\n${text}\n`)
  },
}

const directory = mkdtempSync(join(tmpdir(), 'lango-workflow-example-'))
const database = new Database(join(directory, 'lango.db'))
database.pragma('journal_mode = WAL')
database.pragma('synchronous = NORMAL')
const db = new Kysely({ dialect: new SqliteDialect({ database }) })
await migrateWorkflow(db)

const engine = new WorkflowEngine({ store: new SqliteWorkflowStore(db), shellRunner, channelSender })
engine.on('step:end', ({ stepId, status, attempt }) =>
  console.log(`step ${stepId.padEnd(18)} ${status} (attempt ${attempt})`),
)
try {
  await engine.start()
  const yaml = readFileSync(new URL('./daily-report.flow.yaml', import.meta.url), 'utf8')
  const { runId } = await engine.startRun(yaml)
  const run = await engine.waitForRun(runId, { timeoutMs: 60_000 })
  console.log(`run ${run.runId}: ${run.status} (${run.completedSteps}/${run.totalSteps} steps)`)
  for (const step of run.steps)
    console.log(`  ${step.stepId.padEnd(18)} ${step.status.padEnd(9)} ${JSON.stringify(step.result)}`)
  process.exitCode = run.status === 'completed' ? 0 : 1
} finally {
  await engine.stop()
  await db.destroy()
  rmSync(directory, { recursive: true, force: true })
}
