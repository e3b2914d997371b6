/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /**
   * Give up after this long. Default 15 s: generous, as a deadline on a loaded machine should be
   * (CI shares two cores); it bounds a wait, it is not an assertion about speed.
   */
  readonly timeoutMs?: number
  /** Time between two checks. Default 10 ms. */
  readonly intervalMs?: number
  /** What is awaited, named in the error on timeout. */
  readonly what?: string
}

/**
 * The one polling wait of the test trees: calls `condition` until it returns (or resolves to)
 * something other than `false` or `undefined`, and resolves with that value. Rejects with an error
 * naming `what` once `timeoutMs` has passed; an error `condition` throws is rethrown at once.
 *
 * Prefer awaiting an event (`nextEvent`, `events.next`, a recorder's `next()`); poll only what
 * announces nothing, such as a file, a process or another server.
 *
 * @example
 * await waitFor(() => runner.calls.length === 1)
 * const row = await waitFor(() => store.getRun(runId), { timeoutMs: 30_000, what: 'the run row' })
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  options: WaitForOptions = {},
): Promise<Exclude<T, false | undefined>> {
  const timeoutMs = options.timeoutMs ?? 15_000
  const intervalMs = options.intervalMs ?? 10
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await condition()
    if (value !== false && value !== undefined) return value as Exclude<T, false | undefined>
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${options.what ?? 'the condition'}`)
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
