import { abortable } from './abort.js'
import { formatDuration } from './duration.js'
import { CronError, toError } from './errors.js'
import type { CronJob, CronRun } from './model.js'
import type { Clock, Logger, PingDetails, PingPhase, RunMonitor } from './ports.js'

/** Counts of the dead-man pings this scheduler sent: {@link CronScheduler.pingStats}. */
export interface PingStats {
  /** Pings the monitor accepted (its `ping` resolved in time). */
  readonly sent: number
  /** Pings that failed or timed out (`pingTimeoutMs`). */
  readonly failed: number
  /** Pings in flight right now. */
  readonly pending: number
}

/** The start ping of one run, which its end ping follows. */
export interface RunPing {
  readonly url: string
  readonly started: Promise<void>
}

/** What {@link RunPings} needs of the settings. */
interface RunPingsSettings {
  readonly runMonitor: RunMonitor | undefined
  readonly clock: Clock
  readonly logger: Logger
  readonly pingTimeoutMs: number
}

/**
 * The dead-man pings of runs whose job has a `pingUrl`: `start` when the run starts, then
 * `success` (completed, or skipped by the job's `when` gate: the job is alive and chose not to
 * run) or `failure` (any other final status) when it ends. Fire-and-forget: the
 * run neither waits for a ping nor sees its error. Each ping is bounded by `pingTimeoutMs` (its
 * signal aborts, and a monitor that ignores the signal is abandoned), failures are logged (host
 * only: the URL's path is a credential of the monitor) and counted, and every ping is handed to
 * `track` so the scheduler's `whenIdle()` and `stop()` wait for it. An end ping is sent only after
 * its start ping settled, so the monitor sees them in order.
 */
export class RunPings {
  readonly #settings: RunPingsSettings
  readonly #track: (task: Promise<unknown>) => void
  #sent = 0
  #failed = 0
  #pending = 0

  constructor(settings: RunPingsSettings, track: (task: Promise<unknown>) => void) {
    this.#settings = settings
    this.#track = track
  }

  /** The counts so far. */
  get stats(): PingStats {
    return { sent: this.#sent, failed: this.#failed, pending: this.#pending }
  }

  /** Sends the start ping of `run` when its job has a ping URL; undefined otherwise. */
  start(job: CronJob, run: CronRun): RunPing | undefined {
    const url = job.pingUrl
    if (url === null || url === undefined || this.#settings.runMonitor === undefined) return undefined
    const started = this.#send(url, 'start', { jobId: job.id, jobName: job.name, runId: run.id })
    this.#track(started)
    return { url, started }
  }

  /** Sends the end ping of a run that had a start ping, once that one settled. */
  end(ping: RunPing | undefined, job: CronJob, final: CronRun): void {
    if (ping === undefined) return
    const phase: PingPhase =
      final.status === 'completed' || final.status === 'skipped' ? 'success' : 'failure'
    const exitCode = phase === 'failure' ? exitCodeOf(final.error) : undefined
    const details: PingDetails = {
      jobId: job.id,
      jobName: job.name,
      runId: final.id,
      status: final.status,
      ...(final.durationMs === null ? {} : { durationMs: final.durationMs }),
      ...(exitCode === undefined ? {} : { exitCode }),
    }
    this.#track(ping.started.then(() => this.#send(ping.url, phase, details)))
  }

  /** One ping; never rejects. */
  async #send(url: string, phase: PingPhase, details: PingDetails): Promise<void> {
    const { runMonitor, clock, logger, pingTimeoutMs } = this.#settings
    if (runMonitor === undefined) return
    this.#pending += 1
    const timeout = new AbortController()
    const timer = clock.setTimeout(() => {
      timeout.abort(
        new CronError('CRON_PING_TIMEOUT', `ping timed out after ${formatDuration(pingTimeoutMs)}`, {
          data: { timeoutMs: pingTimeoutMs },
        }),
      )
    }, pingTimeoutMs)
    const { signal } = timeout
    try {
      signal.throwIfAborted()
      await abortable(Promise.resolve(runMonitor.ping(url, phase, { signal, details })), signal)
      this.#sent += 1
    } catch (caught) {
      this.#failed += 1
      const error = toError(signal.aborted ? signal.reason : caught)
      logger.warn('cron ping failed', {
        jobId: details.jobId,
        runId: details.runId,
        phase,
        host: hostOf(url),
        error: error.message.slice(0, 300),
      })
    } finally {
      clock.clearTimeout(timer)
      this.#pending -= 1
    }
  }
}

/** The exit code of a failed shell run, from the executor's `exit code <n>…` error text. */
function exitCodeOf(error: string | null): number | undefined {
  const match = /^exit code (\d{1,10})\b/.exec(error ?? '')
  return match?.[1] === undefined ? undefined : Number(match[1])
}

function hostOf(url: string): string {
  try {
    return new URL(url).host
  } catch {
    return 'invalid'
  }
}
