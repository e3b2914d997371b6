import { AUTOMATION_PREFIX } from './automation-prefix.js'
import { BackgroundError } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'
import type { AgentRunner, ChannelNotifier, Clock, IdGenerator, LogFields, Logger } from './ports.js'
import { silentLogger } from './silent-logger.js'
import { systemClock } from './system-clock.js'

/** Longest timeout a timer can express (2^31 - 1 ms, about 24.8 days); longer ones must be `Infinity`. */
const MAX_TIMER_MS = 2_147_483_647

/**
 * Options of a `BackgroundManager`. Only `agentRunner` and `channelSender` are required (the names
 * cron and workflow use for the same ports); `runner` and `notifier` are their deprecated aliases.
 */
export type BackgroundManagerOptions = BackgroundManagerSettings & AgentRunnerOption & ChannelSenderOption

/** The agent runner under its name, or under the deprecated `runner`. */
type AgentRunnerOption =
  | {
      /** Does each task's work. */
      readonly agentRunner: AgentRunner
      /** @deprecated Use `agentRunner`; `runner` is still honoured for one release. */
      readonly runner?: AgentRunner
    }
  | {
      readonly agentRunner?: undefined
      /** @deprecated Use `agentRunner`; `runner` is still honoured for one release. */
      readonly runner: AgentRunner
    }

/** The channel port under its name, or under the deprecated `notifier`. */
type ChannelSenderOption =
  | {
      /** Tells the origin channel when a task starts and ends. */
      readonly channelSender: ChannelNotifier
      /** @deprecated Use `channelSender`; `notifier` is still honoured for one release. */
      readonly notifier?: ChannelNotifier
    }
  | {
      readonly channelSender?: undefined
      /** @deprecated Use `channelSender`; `notifier` is still honoured for one release. */
      readonly notifier: ChannelNotifier
    }

/** The options of a `BackgroundManager` besides its ports. */
interface BackgroundManagerSettings {
  /** Tasks running at once. Default 3. */
  readonly maxConcurrentTasks?: number
  /** Pending tasks waiting for a slot; submissions beyond it are rejected (`BACKGROUND_QUEUE_FULL`). Default 100. */
  readonly maxQueuedTasks?: number
  /** Default per-task timeout in ms, from start; `Infinity` for none (then no timer is set). Default 30 min. */
  readonly taskTimeoutMs?: number
  /** Ended tasks kept for `snapshot`/`list`/`result`; the oldest beyond it are evicted. Default 500. */
  readonly maxFinishedTasks?: number
  /** Longest accepted prompt, in characters. Default 100,000. */
  readonly maxPromptLength?: number
  /** Longest stored result, in characters; longer results are cut and marked. Default 65,536. */
  readonly maxResultLength?: number
  /** How long one notice may take before it is abandoned. Default 30 s. */
  readonly notifyTimeoutMs?: number
  /** How long `stop()` waits for runners and notices after aborting them. Default 10 s. */
  readonly stopGraceMs?: number
  /** Text put before every prompt. Default `AUTOMATION_PREFIX`; `''` for none. */
  readonly automationPrefix?: string
  /**
   * Deepest nesting of tasks submitted from inside automation runs (`SubmitRequest.nesting`; SECURITY.md
   * WF-7): an agent whose task submits a task that submits a task… is refused past it, so a prompt
   * cannot spend without end. Default 2, as `@lango/workflow`'s `maxNesting`.
   */
  readonly maxNesting?: number
  /** Default `systemClock`. */
  readonly clock?: Clock
  /** Default `silentLogger`. Logs carry ids, statuses and sizes, never prompts or results. */
  readonly logger?: Logger
  /** Returns a new unique task id. Default `crypto.randomUUID`. */
  readonly idGenerator?: IdGenerator
}

/** The defaults `BackgroundManager` uses for options that are not given. */
const DEFAULT_OPTIONS = Object.freeze({
  maxConcurrentTasks: 3,
  maxQueuedTasks: 100,
  taskTimeoutMs: 30 * 60_000,
  maxFinishedTasks: 500,
  maxPromptLength: 100_000,
  maxResultLength: 65_536,
  notifyTimeoutMs: 30_000,
  stopGraceMs: 10_000,
  automationPrefix: AUTOMATION_PREFIX,
  maxNesting: 2,
})

/** Every option with its default. */
export type ResolvedOptions = Required<BackgroundManagerSettings> & {
  readonly agentRunner: AgentRunner
  readonly channelSender: ChannelNotifier
}

/**
 * Applies the defaults and checks every option; throws `BACKGROUND_INVALID_INPUT` naming the first
 * one that is missing or out of range. The new names of the ports win over their deprecated aliases.
 */
export function resolveOptions(options: BackgroundManagerOptions): ResolvedOptions {
  checkManagerKeys(options)
  const agentRunner = options?.agentRunner ?? options?.runner
  if (typeof agentRunner?.run !== 'function') {
    throw invalidInput('agentRunner is required and must have a run() method', { field: 'agentRunner' })
  }
  const channelSender = options.channelSender ?? options.notifier
  if (typeof channelSender?.send !== 'function') {
    throw invalidInput('channelSender is required and must have a send() method', { field: 'channelSender' })
  }
  const resolved: ResolvedOptions = {
    agentRunner,
    channelSender,
    maxConcurrentTasks: options.maxConcurrentTasks ?? DEFAULT_OPTIONS.maxConcurrentTasks,
    maxQueuedTasks: options.maxQueuedTasks ?? DEFAULT_OPTIONS.maxQueuedTasks,
    taskTimeoutMs: options.taskTimeoutMs ?? DEFAULT_OPTIONS.taskTimeoutMs,
    maxFinishedTasks: options.maxFinishedTasks ?? DEFAULT_OPTIONS.maxFinishedTasks,
    maxPromptLength: options.maxPromptLength ?? DEFAULT_OPTIONS.maxPromptLength,
    maxResultLength: options.maxResultLength ?? DEFAULT_OPTIONS.maxResultLength,
    notifyTimeoutMs: options.notifyTimeoutMs ?? DEFAULT_OPTIONS.notifyTimeoutMs,
    stopGraceMs: options.stopGraceMs ?? DEFAULT_OPTIONS.stopGraceMs,
    automationPrefix: options.automationPrefix ?? DEFAULT_OPTIONS.automationPrefix,
    maxNesting: options.maxNesting ?? DEFAULT_OPTIONS.maxNesting,
    clock: options.clock ?? systemClock,
    logger: options.logger === undefined ? silentLogger : safeLogger(options.logger),
    idGenerator: options.idGenerator ?? (() => globalThis.crypto.randomUUID()),
  }
  checkInteger(resolved.maxConcurrentTasks, 'maxConcurrentTasks', 1)
  checkInteger(resolved.maxQueuedTasks, 'maxQueuedTasks', 0)
  checkInteger(resolved.maxFinishedTasks, 'maxFinishedTasks', 0)
  checkInteger(resolved.maxPromptLength, 'maxPromptLength', 1)
  checkInteger(resolved.maxResultLength, 'maxResultLength', 1)
  checkInteger(resolved.maxNesting, 'maxNesting', 0, 100)
  checkTimeout(resolved.taskTimeoutMs, 'taskTimeoutMs')
  checkInteger(resolved.notifyTimeoutMs, 'notifyTimeoutMs', 1, MAX_TIMER_MS)
  checkInteger(resolved.stopGraceMs, 'stopGraceMs', 0, MAX_TIMER_MS)
  if (typeof resolved.automationPrefix !== 'string') {
    throw invalidInput('automationPrefix must be a string', { field: 'automationPrefix' })
  }
  if (typeof resolved.idGenerator !== 'function') {
    throw invalidInput('idGenerator must be a function', { field: 'idGenerator' })
  }
  return resolved
}

const checkManagerKeys = refuseUnknownKeys('BackgroundManager options', [
  'agentRunner',
  'channelSender',
  'maxConcurrentTasks',
  'maxQueuedTasks',
  'taskTimeoutMs',
  'maxFinishedTasks',
  'maxPromptLength',
  'maxResultLength',
  'notifyTimeoutMs',
  'stopGraceMs',
  'automationPrefix',
  'maxNesting',
  'clock',
  'logger',
  'idGenerator',
  'runner',
  'notifier',
])

/** Wraps a logger so that a throwing logger can never break task bookkeeping. */
function safeLogger(logger: Logger): Logger {
  const wrap =
    (level: keyof Logger) =>
    (message: string, fields?: LogFields): void => {
      try {
        logger[level](message, fields)
      } catch {
        // A broken logger must not change any task's outcome; there is nowhere left to report it.
      }
    }
  return Object.freeze({ debug: wrap('debug'), info: wrap('info'), warn: wrap('warn'), error: wrap('error') })
}

function checkInteger(value: number, field: string, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw invalidInput(`${field} must be an integer from ${min} to ${max}`, { field })
  }
}

export function checkTimeout(value: number, field: string): void {
  if (value === Number.POSITIVE_INFINITY) return
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS) {
    throw invalidInput(
      `${field} must be a positive number of milliseconds up to ${MAX_TIMER_MS}, or Infinity`,
      {
        field,
      },
    )
  }
}

export function invalidInput(message: string, data: Readonly<Record<string, unknown>>): BackgroundError {
  return new BackgroundError('BACKGROUND_INVALID_INPUT', message, { data })
}
