import { setTimeout as sleep } from 'node:timers/promises'
import { readDuration } from '@lango/duration'
import { InvalidArgumentError } from 'commander'
import { formatDuration } from '../config/rules.js'
import { CliError } from './errors.js'

/** Longest `--timeout`: a week. */
const MAX_TIMEOUT_MS = 7 * 24 * 60 * 60 * 1000

/**
 * Commander parser of a duration option: `30s`, `5m`, `1h30m`, `250ms` (the one grammar of ADR
 * 0013), or a bare number of seconds, as command-line tools read one (`timeout 30`). A bad value is
 * a usage error (exit 2) saying what is accepted.
 */
export function durationOption(value: string): number {
  return readDurationOption(value, MAX_TIMEOUT_MS)
}

/**
 * A duration option read as {@link durationOption} reads one, more than zero; `max` bounds it
 * (none: the server, which knows its own limit, checks it).
 */
export function readDurationOption(value: string, max?: number): number {
  const bareSeconds = /^\d{1,12}(?:\.\d{1,3})?$/.test(value.trim())
  const reading = readDuration(bareSeconds ? `${value.trim()}s` : value)
  const ms = reading.ok ? reading.milliseconds : undefined
  if (ms === undefined || ms <= 0 || (max !== undefined && ms > max))
    throw new InvalidArgumentError(
      `expected a duration with a unit such as 30s, 5m or 1h30m, or a number of seconds, more than zero${
        max === undefined ? '' : `, up to ${formatDuration(max)}`
      }`,
    )
  return ms
}

/** Commander parser of a positive whole number up to `max`. */
export function integerOption(max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
      throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`)
    return Number(value)
  }
}

/** Options of {@link waitFor}. */
export interface WaitOptions<T> {
  /** Give up after this long (`--timeout`); default: wait until the end. */
  readonly timeoutMs?: number | undefined
  /** First poll interval; it grows to 1 s. Default 200 ms. */
  readonly intervalMs?: number
  /** Called with every state read, e.g. to print progress. */
  readonly onState?: (state: T) => void
  /** What is being waited for, for the timeout message (`workflow run 3f2…`). */
  readonly what: string
}

/**
 * Polls `read` until `isDone` holds. Past `timeoutMs` it throws `CLI_WAIT_TIMEOUT` (exit 1),
 * naming what was waited for: the run itself goes on.
 */
export async function waitFor<T>(
  read: () => Promise<T>,
  isDone: (state: T) => boolean,
  options: WaitOptions<T>,
): Promise<T> {
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs
  let interval = options.intervalMs ?? 200
  for (;;) {
    const state = await read()
    options.onState?.(state)
    if (isDone(state)) return state
    const left = deadline - Date.now()
    if (left <= 0)
      throw new CliError(
        'CLI_WAIT_TIMEOUT',
        `gave up waiting for ${options.what} after ${formatDuration(options.timeoutMs ?? 0)}; it goes on (check it later)`,
        { data: { state } },
      )
    await sleep(Math.min(interval, left))
    interval = Math.min(1000, Math.round(interval * 1.5))
  }
}
