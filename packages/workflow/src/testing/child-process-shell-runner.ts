import { spawn } from 'node:child_process'
import type { ShellRunner, ShellRunRequest, ShellRunResult } from '../ports.js'

/** Options of {@link ChildProcessShellRunner}. */
export interface ChildProcessShellRunnerOptions {
  /** Working directory of commands whose request has no `cwd`. Default: the process's. */
  readonly cwd?: string
  /** Extra environment variables, merged over the process's environment. */
  readonly env?: Readonly<Record<string, string>>
  /** Bytes kept per stream; the rest is dropped. Default 1 MiB. */
  readonly maxOutputBytes?: number
}

/**
 * A bare `sh -c` {@link ShellRunner} for tests and examples: real processes, each in its own process
 * group, killed as a group (SIGKILL) when the step's signal aborts.
 *
 * Not for production: it applies no `lango` CLI guard, no environment filtering and no secret
 * handling. apps/server's ShellRunner goes through `@lango/exec` `run()` for that (SECURITY.md WF-9).
 */
export class ChildProcessShellRunner implements ShellRunner {
  readonly #options: ChildProcessShellRunnerOptions
  /** Every request received, in order. */
  readonly calls: ShellRunRequest[] = []

  constructor(options: ChildProcessShellRunnerOptions = {}) {
    this.#options = Object.freeze({ ...options })
  }

  run(request: ShellRunRequest, options: { readonly signal: AbortSignal }): Promise<ShellRunResult> {
    this.calls.push(request)
    options.signal.throwIfAborted()
    const limit = this.#options.maxOutputBytes ?? 1024 * 1024
    return new Promise<ShellRunResult>((resolve, reject) => {
      const child = spawn('sh', ['-c', request.command], {
        cwd: request.cwd ?? this.#options.cwd,
        env: this.#options.env === undefined ? process.env : { ...process.env, ...this.#options.env },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      const stdout: Buffer[] = []
      const stderr: Buffer[] = []
      let stdoutBytes = 0
      let stderrBytes = 0
      child.stdout.on('data', (chunk: Buffer) => {
        if (stdoutBytes < limit) stdout.push(chunk.subarray(0, limit - stdoutBytes))
        stdoutBytes += chunk.length
      })
      child.stderr.on('data', (chunk: Buffer) => {
        if (stderrBytes < limit) stderr.push(chunk.subarray(0, limit - stderrBytes))
        stderrBytes += chunk.length
      })
      const kill = () => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
        } catch {
          // The group is already gone.
        }
      }
      const onAbort = () => {
        kill()
        reject(options.signal.reason)
      }
      options.signal.addEventListener('abort', onAbort, { once: true })
      child.on('error', (error) => {
        options.signal.removeEventListener('abort', onAbort)
        reject(error)
      })
      child.on('close', (code) => {
        options.signal.removeEventListener('abort', onAbort)
        resolve({
          exitCode: code,
          stdout: Buffer.concat(stdout).toString('utf8'),
          stderr: Buffer.concat(stderr).toString('utf8'),
        })
      })
    })
  }
}
