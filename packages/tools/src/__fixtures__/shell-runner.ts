import { blockLangoExec, type RunOptions, run } from '@lango/exec'

/**
 * A host's `ShellRunner` in miniature (ADR 0006), for cron's and workflow's engines alike: the
 * `lango` guard on the command (a refusal is `blocked` with the guard's message), then
 * `@lango/exec`'s `run` with the request's cwd and timeout, the signal, and `options`.
 */
export function guardedShellRunner(options: Pick<RunOptions, 'envSource' | 'killGraceMs'> = {}) {
  return {
    async run(
      request: { readonly command: string; readonly cwd?: string; readonly timeoutMs: number },
      { signal }: { readonly signal: AbortSignal },
    ) {
      const message = blockLangoExec(request.command, { automationAvailable: true })
      if (message !== '') return { exitCode: null, stdout: '', stderr: '', blocked: true, message }
      return run(request.command, { cwd: request.cwd, timeoutMs: request.timeoutMs, signal, ...options })
    },
  }
}
