import {
  blockLangoExec,
  createEnvBuilder,
  type EnvPolicy,
  ProcessRegistry,
  type PtyDriver,
  type RefStore,
  RunLimiter,
  type RunOptions,
  run,
} from '@lango/exec'
import { nodePtyDriver } from '@lango/exec/pty'
import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'
import type { HostShellRunner } from '../scheduled-workflows/dispatch.js'
import { automationOf } from './automation.js'

/** What every command of the server runs with: the vault, the env policy, one run limiter, the default cwd. */
type ExecDefaults = Pick<RunOptions, 'refStore' | 'unknownReferences' | 'envPolicy' | 'limiter' | 'cwd'>

/** The server's exec: the shared run defaults, the background process registry, the guarded shell runner. */
export interface HostExec {
  readonly defaults: ExecDefaults
  /** Throws `EXEC_ENV_REJECTED` for agent env overrides the spawners would refuse (checked before approval). */
  checkEnv(env: Readonly<Record<string, string>>): void
  readonly processes: ProcessRegistry
  /** The shell runner of cron jobs and workflow steps (ADR 0006), behind the `lango` guard. */
  readonly shell: HostShellRunner
}

/**
 * Exec as the server wires it (ADR 0006): secrets resolved through `refStore`, the configured env
 * policy, and one cap on foreground commands from every source.
 */
export function createHostExec(config: ServerConfig, refStore: RefStore, logger: Logger): HostExec {
  const envPolicy: EnvPolicy = {
    inherit: config.exec.inherit,
    allow: config.exec.envAllow,
    deny: config.exec.envDeny,
  }
  // Foreground commands from every source share one cap (exec.max_commands); more wait, up to eight
  // times as many, then are refused.
  const limiter = new RunLimiter({
    maxRunning: config.exec.maxCommands,
    maxWaiting: 8 * config.exec.maxCommands,
  })
  // A `{{secret:…}}` the vault does not hold is a mistake (a misspelt name), never text to pass on.
  const unknownReferences = 'refuse'
  const defaults = {
    refStore,
    unknownReferences,
    envPolicy,
    limiter,
    cwd: config.exec.cwd,
  } satisfies ExecDefaults
  const processes = new ProcessRegistry({
    ...ptyDriverOf(logger),
    refStore,
    unknownReferences,
    envPolicy,
    maxRunning: config.exec.maxBackgroundProcesses,
    logger,
  })
  const automation = automationOf(config)
  const shell: HostShellRunner = {
    async run(request, { signal }) {
      const message = blockLangoExec(request.command, { automationAvailable: automation })
      if (message !== '') return { exitCode: null, stdout: '', stderr: '', blocked: true, message }
      return run(request.command, {
        ...defaults,
        ...(request.cwd === undefined ? {} : { cwd: request.cwd }),
        timeoutMs: request.timeoutMs,
        // A webhook call's body reaches a shell job on its stdin, never in its command line.
        ...('payload' in request && request.payload !== undefined ? { input: request.payload } : {}),
        signal,
        envSource: 'trusted',
        logger,
      })
    },
  }
  // The same policy the spawners apply, on the overrides alone (nothing is read from the server's env).
  const overrides = createEnvBuilder(envPolicy)
  const checkEnv = (env: Readonly<Record<string, string>>): void => {
    overrides.build({ overrides: env, overrideSource: 'agent', replace: true })
  }
  return { defaults, processes, shell, checkEnv }
}

/**
 * node-pty's driver for background sessions with `pty: true`, or none when node-pty is not
 * installed or does not load (an optional dependency npm may not have built): the server still
 * starts and runs every command without a terminal, as the README promises; `pty: true` then fails
 * with `EXEC_PTY_UNAVAILABLE`, and `lango doctor` says so. An outside probe's server exited at start.
 */
function ptyDriverOf(logger: Logger): { ptyDriver?: PtyDriver } {
  try {
    return { ptyDriver: nodePtyDriver() }
  } catch (error) {
    logger.warn(
      'node-pty does not load: commands run without a terminal, and pty: true fails (lango doctor)',
      {
        error,
      },
    )
    return {}
  }
}
