// @ts-check
// An MCP server over stdio with all 22 Lango tools over real services on one SQLite file.
// Run: LANGO_HOME=/tmp/lango node mcp-host/server.mjs (an MCP client starts it). Logs go to stderr.
import { homedir } from 'node:os'
import { join } from 'node:path'
import { BackgroundManager } from '@lango/background'
import { CronService } from '@lango/cron'
import { migrateCron, SqliteCronStore } from '@lango/cron/sqlite'
import { blockLangoExec, ProcessRegistry, run } from '@lango/exec'
import { nodePtyDriver, runWithPty } from '@lango/exec/pty'
import { buildAutomationPromptSection } from '@lango/prompts'
import {
  createBackgroundTools,
  createCronTools,
  createExecTools,
  createManageCronJobsTool,
  createWorkflowTools,
} from '@lango/tools'
import { registerTools } from '@lango/tools/mcp'
import { WorkflowDirectory, WorkflowEngine } from '@lango/workflow'
import { migrateWorkflow, SqliteWorkflowStore } from '@lango/workflow/sqlite'
import { McpServer } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'

// One SQLite file, one Kysely for cron's and workflow's tables (opening the workflows directory
// creates $LANGO_HOME, mode 0700; better-sqlite3 waits up to 5 s on a locked database).
const home = process.env.LANGO_HOME ?? join(homedir(), '.lango')
const directory = await WorkflowDirectory.open(join(home, 'workflows'))
const database = new Database(join(home, 'lango.db'))
database.pragma('journal_mode = WAL')
const db = new Kysely({ dialect: new SqliteDialect({ database }) })
await migrateCron(db)
await migrateWorkflow(db)

// The ports (ADR 0006): one adapter of each kind serves cron, workflow and background.
const shellRunner = {
  /** @param {{ command: string, cwd?: string, timeoutMs: number }} request @param {{ signal: AbortSignal }} options */
  async run({ command, cwd, timeoutMs }, { signal }) {
    const message = blockLangoExec(command, { automationAvailable: true })
    if (message !== '') return { exitCode: null, stdout: '', stderr: '', blocked: true, message }
    return run(command, { cwd, timeoutMs, signal, envSource: 'trusted' })
  },
}
// No model here: agent runs fail with "no model configured" in their history.
const agentRunner = { run: async () => Promise.reject(new Error('no model configured')) }
// Every delivery is written to stderr, whatever its target (jobs and runs default to `stderr`).
/** @type {{ send(target: string, text: string): Promise<void> }} */
const channelSender = { send: async (target, text) => void process.stderr.write(`[${target}] ${text}\n`) }
const ports = { shellRunner, agentRunner, channelSender }

const cron = new CronService({ store: new SqliteCronStore(db), ...ports })
const engine = new WorkflowEngine({ store: new SqliteWorkflowStore(db), ...ports })
const background = new BackgroundManager({ agentRunner, channelSender })
const registry = new ProcessRegistry({ ptyDriver: nodePtyDriver() })
await Promise.all([cron.start(), engine.start(), background.start()])

// Hosts end a call after 60 s (Claude Desktop): waits stay under it; longer work uses exec_bg/workflow_status.
// Over MCP the session (`mcp`) names no chat, so jobs, runs and tasks deliver to `stderr`.
const defaultDeliverTo = ['stderr']
const tools = [
  ...createExecTools({ backend: { run, runWithPty, registry, blockLangoExec }, maxTimeoutSeconds: 50 }),
  ...createCronTools({ service: cron, defaultDeliverTo }),
  createManageCronJobsTool({ service: cron, defaultDeliverTo }),
  ...createBackgroundTools({ service: background, defaultChannel: 'stderr' }),
  ...createWorkflowTools({ service: { engine, directory }, defaultDeliverTo, maxWaitSeconds: 50 }),
]
const instructions = buildAutomationPromptSection({ cron: true, background: true, workflow: true })
serveStdio(() => {
  const server = new McpServer({ name: 'lango', version: '0.1.0' }, { instructions })
  registerTools(server, tools)
  return server
})

// The client closes stdin (or signals) to end the session: stop everything, close the database, exit 0.
const stopAll = () => Promise.all([cron.stop(), engine.stop(), background.stop(), registry.stop()])
const shutdown = () => stopAll().then(() => db.destroy().then(() => process.exit(0)))
process.stdin.once('end', shutdown)
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, shutdown)
