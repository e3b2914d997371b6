import * as v from 'valibot'
import { defineTool } from '../tool.js'

/**
 * A safe tool `probe` whose call waits until its signal aborts: `running` settles when the call
 * starts, `aborted` with the signal's reason once the call has seen the abort.
 */
export function abortProbe() {
  let started!: () => void
  const running = new Promise<void>((resolve) => (started = resolve))
  let sawAbort!: (reason: unknown) => void
  const aborted = new Promise<unknown>((resolve) => (sawAbort = resolve))
  const tool = defineTool({
    name: 'probe',
    title: 'Probe',
    description: 'Waits until the call is aborted.',
    safety: 'safe',
    parameters: v.strictObject({}),
    output: v.strictObject({}),
    async handler(_params, context) {
      started()
      await new Promise<void>((resolve) =>
        context.signal?.addEventListener('abort', () => {
          sawAbort(context.signal?.reason)
          resolve()
        }),
      )
      return {}
    },
  })
  return { tool, running, aborted }
}
