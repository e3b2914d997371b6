import { BackgroundManager } from '../background-manager.js'
import type { BackgroundManagerOptions } from '../background-manager-options.js'
import type { AgentRunner, ChannelNotifier, LogFields, Logger } from '../ports.js'
import { FakeClock } from '../testing/fake-clock.js'
import { RecordingAgentRunner } from '../testing/recording-agent-runner.js'
import { RecordingChannelSender } from '../testing/recording-channel-sender.js'

/** The fixed start time of every fake clock in these tests. */
export const REFERENCE_TIME = Date.UTC(2025, 0, 6, 9, 0, 0)

/** One recorded log call. */
export interface LogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error'
  readonly message: string
  readonly fields: LogFields | undefined
}

/** A logger that keeps every call. */
export function recordingLogger(): Logger & { readonly entries: LogEntry[] } {
  const entries: LogEntry[] = []
  const record =
    (level: LogEntry['level']) =>
    (message: string, fields?: LogFields): void => {
      entries.push({ level, message, fields })
    }
  return {
    entries,
    debug: record('debug'),
    info: record('info'),
    warn: record('warn'),
    error: record('error'),
  }
}

/** A manager over fakes with predictable ids (`task-1`, `task-2`, …) and a fake clock. */
export function createHarness<
  R extends AgentRunner = RecordingAgentRunner,
  N extends ChannelNotifier = RecordingChannelSender,
>(
  overrides: Partial<
    Omit<BackgroundManagerOptions, 'agentRunner' | 'channelSender' | 'runner' | 'notifier'>
  > & {
    readonly runner?: R
    readonly notifier?: N
  } = {},
) {
  const clock = overrides.clock instanceof FakeClock ? overrides.clock : new FakeClock(REFERENCE_TIME)
  const runner = (overrides.runner ?? new RecordingAgentRunner()) as R
  const notifier = (overrides.notifier ?? new RecordingChannelSender()) as N
  let count = 0
  const manager = new BackgroundManager({
    idGenerator: () => {
      count += 1
      return `task-${count}`
    },
    ...overrides,
    clock,
    agentRunner: runner,
    channelSender: notifier,
  })
  return { manager, runner, notifier, clock }
}

/** Lets pending promise callbacks run (one macrotask turn). Used only after a fake-clock step. */
export function flushPromises(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
