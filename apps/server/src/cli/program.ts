import { Command, CommanderError } from 'commander'
import { VERSION } from '../version.js'
import { formatIssue } from './client.js'
import type { ActionBinder, CommandOptions } from './command.js'
import { registerBackup } from './commands/backup.js'
import { registerBackground } from './commands/bg.js'
import { registerCost } from './commands/cost.js'
import { registerCron } from './commands/cron.js'
import { registerSecrets } from './commands/secrets.js'
import { registerServe } from './commands/serve.js'
import { registerApprovals, registerTools } from './commands/tools.js'
import { registerWorkflow } from './commands/workflow.js'
import { createContext } from './context.js'
import { registerDoctor } from './doctor/index.js'
import { ApiError, CliError, type CliIssue, EXIT } from './errors.js'
import { type CliIo, Output, terminalText } from './output.js'

/** How a `lango` invocation ended. */
export interface CliResult {
  readonly exitCode: number
  /** `serve` and `mcp`: the process keeps serving after `runCli` returns. */
  readonly keepRunning: boolean
}

/** The process's streams and environment. */
function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env }
}

/**
 * Runs `lango` with `argv` (the arguments after `lango`): parses with commander, runs one command,
 * prints its outcome, and returns the exit code (0 ok, 1 failure, 2 usage, 3 server not running).
 * Never throws and never exits the process: `src/cli.ts` does.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo()): Promise<CliResult> {
  const state = { exitCode: EXIT.ok as number, keepRunning: false }
  const bind: ActionBinder =
    (handler) =>
    async (...actionArgs) => {
      const command = actionArgs.at(-1) as Command
      const options = actionArgs.at(-2) as CommandOptions
      const positional = actionArgs.slice(0, -2) as string[]
      const globals = command.optsWithGlobals<{ json?: boolean; url?: string }>()
      const out = new Output(io, { json: globals.json === true })
      const context = createContext(io, out, { json: out.json, url: globals.url })
      // Holds the event loop open until the command ends: some waits (a database's checkpoint worker
      // closing, behind unref'd handles) would otherwise let Node exit mid-command with code 13.
      const keepAlive = setInterval(() => {}, 60_000)
      try {
        const outcome = await handler(context, positional, options)
        if (outcome.silent !== true) {
          if (out.json) out.document(outcome.data)
          else outcome.render?.(out)
        }
        state.exitCode = outcome.exitCode ?? EXIT.ok
        state.keepRunning = outcome.keepRunning === true
      } catch (error) {
        state.exitCode = reportError(out, error)
      } finally {
        clearInterval(keepAlive)
      }
    }
  const json = argv.includes('--json')
  // Under --json, help is one JSON document on stdout (`{ "help": "…" }`), not text.
  const help: string[] = []
  const program = createProgram(io, bind, { json, help: (text) => help.push(text) })
  try {
    await program.parseAsync([...argv], { from: 'user' })
  } catch (error) {
    if (!(error instanceof CommanderError)) {
      state.exitCode = reportError(new Output(io, { json }), error)
      return state
    }
    // --help and --version end here too, with commander's exit code 0.
    if (error.exitCode === 0) {
      if (json && help.length > 0) new Output(io, { json: true }).document({ help: help.join('') })
      return { exitCode: EXIT.ok, keepRunning: false }
    }
    if (json)
      new Output(io, { json: true }).document({
        error: {
          code: 'CLI_USAGE',
          // No command given: commander shows the help (on stderr) and says only "(outputHelp)".
          message:
            error.code === 'commander.help'
              ? 'a command is required: lango <command> (lango --help lists them)'
              : error.message.replace(/^error: /, ''),
        },
      })
    return { exitCode: EXIT.usage, keepRunning: false }
  }
  return state
}

/**
 * The `lango` command tree; `bind` turns each command's handler into its action. `json`: the
 * command line has `--json`, which `--version` must honour even when it comes first (commander
 * acts on `--version` the moment it reads it).
 */
function createProgram(
  io: CliIo,
  bind: ActionBinder,
  options: { readonly json: boolean; readonly help: (text: string) => void },
): Command {
  const program = new Command('lango')
    .description(
      'Lango automation server and CLI: cron jobs, background tasks, workflows and safe exec for AI agents',
    )
    .option('-V, --version', 'print the version (with --json: {"version": "…"})')
    .on('option:version', () => {
      if (options.json) new Output(io, { json: true }).document({ version: VERSION })
      else io.stdout.write(`${VERSION}\n`)
      // Ends parsing the way commander's own --version does: runCli reads exit code 0.
      throw new CommanderError(0, 'commander.version', VERSION)
    })
    .option('--json', 'print one JSON document on stdout and nothing else (every command)')
    .option(
      '--url <url>',
      'server URL (default: $LANGO_URL, else http://<server.host>:<server.port> from the config)',
    )
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .configureOutput({
      // Help (what commander writes out): under --json kept for one document, see runCli.
      writeOut: (text) => (options.json ? options.help(text) : io.stdout.write(text)),
      // commander's own messages quote the command line (`unknown command '…'`): shown escaped.
      writeErr: (text) => io.stderr.write(terminalText(text)),
    })
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
  for (const register of [
    registerServe,
    registerCron,
    registerCost,
    registerBackground,
    registerWorkflow,
    registerTools,
    registerApprovals,
    registerSecrets,
    registerBackup,
    registerDoctor,
  ])
    register(program, bind)
  program.addHelpText(
    'after',
    '\nExit codes: 0 ok, 1 failure (API error, invalid file, failed run under --wait), 2 usage error, 3 server not running.',
  )
  return program
}

/**
 * Prints an error as `error: <message>` (and its issues) on stderr; under `--json` also as the
 * stdout document `{ error: { code, message, … } }`. Never a stack trace, never a cause.
 * Returns the exit code.
 */
function reportError(out: Output, error: unknown): number {
  const { code, message, issues, exitCode, extra } = describeError(error)
  const [first = '', ...rest] = message.split('\n')
  out.error(first, [...rest.map((line) => line.trim()), ...issues.map((issue) => formatIssue(issue))])
  if (out.json)
    out.document({
      error: { code, message, ...(issues.length === 0 ? {} : { issues }), ...extra },
    })
  return exitCode
}

function describeError(error: unknown): {
  code: string
  message: string
  issues: readonly CliIssue[]
  exitCode: number
  extra: Record<string, unknown>
} {
  if (CliError.is(error))
    return {
      code: error.code,
      message: error.message,
      issues: error.issues ?? [],
      exitCode: error.exitCode,
      extra: { ...error.data },
    }
  if (ApiError.is(error))
    return {
      code: error.code,
      message: error.message,
      issues: error.issues ?? [],
      exitCode: EXIT.failure,
      extra: { status: error.status, ...error.details },
    }
  // The packages' errors (ConfigError, VaultError, WorkflowError, ServerError, ExecError) share one
  // shape: a string `code`, a message written for people, issues where they have them.
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string') {
    const { code, issues } = error as Error & { code: string; issues?: readonly CliIssue[] }
    const isConfig = error.name === 'ConfigError'
    return {
      code,
      message: error.message,
      // ConfigError's message already lists its issues, one per line.
      issues: isConfig || !Array.isArray(issues) ? [] : issues,
      exitCode: EXIT.failure,
      extra: isConfig && Array.isArray(issues) ? { issues } : {},
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  return {
    code: 'CLI_FAILED',
    message: message.split('\n')[0] ?? 'failed',
    issues: [],
    exitCode: EXIT.failure,
    extra: {},
  }
}
