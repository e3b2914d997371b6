import { ExecError } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'

const checkLimiterKeys = refuseUnknownKeys('RunLimiter options', ['maxRunning', 'maxWaiting'])
const checkAcquireKeys = refuseUnknownKeys('RunLimiter.acquire options', ['signal'])

/** Options for {@link RunLimiter}. */
export interface RunLimiterOptions {
  /** Commands that may run at once through this limiter (a positive integer). */
  readonly maxRunning: number
  /**
   * Commands that may wait for a free slot, in arrival order (default 0: refuse at once). Waiting
   * honours the run's `signal`, and its `timeoutMs` starts only once it runs.
   */
  readonly maxWaiting?: number
}

/**
 * A cap on concurrent `run()` and `runWithPty()` calls (SECURITY.md RES-5): pass the same limiter
 * to every call it should bound (`{ limiter }`), for example one per host or per session. Beyond
 * `maxRunning`, a call waits if fewer than `maxWaiting` already wait, else it fails at once with
 * `EXEC_TOO_MANY_PROCESSES`; nothing queues without bound. Background processes have their own
 * bound (`ProcessRegistry` `maxRunning`).
 * @example
 * const limiter = new RunLimiter({ maxRunning: 4, maxWaiting: 8 })
 * const result = await run('make test', { limiter })
 */
export class RunLimiter {
  readonly maxRunning: number
  readonly maxWaiting: number
  #running = 0
  readonly #waiting: Array<() => void> = []

  constructor(options: RunLimiterOptions) {
    checkLimiterKeys(options)
    const maxWaiting = options.maxWaiting ?? 0
    if (!Number.isSafeInteger(options.maxRunning) || options.maxRunning < 1)
      throw new ExecError('EXEC_INVALID_OPTION', 'maxRunning must be a positive integer')
    if (!Number.isSafeInteger(maxWaiting) || maxWaiting < 0)
      throw new ExecError('EXEC_INVALID_OPTION', 'maxWaiting must be a non-negative integer')
    this.maxRunning = options.maxRunning
    this.maxWaiting = maxWaiting
  }

  /** Calls holding a slot now. */
  get running(): number {
    return this.#running
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length
  }

  /**
   * Takes a slot, waiting for one if allowed; resolves with the function that gives it back
   * (idempotent). `run` and `runWithPty` call this themselves; hosts may use it for their own work.
   * @throws ExecError `EXEC_TOO_MANY_PROCESSES` when every slot and waiting place is taken; the
   * signal's reason, unchanged, when it aborts while waiting.
   */
  async acquire(options: { readonly signal?: AbortSignal } = {}): Promise<() => void> {
    checkAcquireKeys(options)
    const { signal } = options
    signal?.throwIfAborted()
    if (this.#running < this.maxRunning) {
      this.#running += 1
      return this.#releaser()
    }
    if (this.#waiting.length >= this.maxWaiting)
      throw new ExecError(
        'EXEC_TOO_MANY_PROCESSES',
        `${this.maxRunning} commands are already running${this.maxWaiting > 0 ? ` and ${this.maxWaiting} waiting` : ''}; try again when one has finished`,
        { data: { maxRunning: this.maxRunning, maxWaiting: this.maxWaiting } },
      )
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.#waiting.indexOf(grant)
        if (at >= 0) this.#waiting.splice(at, 1)
        reject(signal?.reason)
      }
      // The slot is handed over by the releasing call: `#running` does not drop in between.
      const grant = () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      this.#waiting.push(grant)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    return this.#releaser()
  }

  #releaser(): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.#waiting.shift()
      if (next === undefined) this.#running -= 1
      else next()
    }
  }
}
