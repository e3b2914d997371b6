import { Writable } from 'node:stream'
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio'
import type { App } from '../app/app.js'
import { createApp } from '../app/create-app.js'
import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'
import { routeWarnings } from '../process-warnings.js'
import { McpApprovals } from './approval.js'
import { createMcpServer } from './server.js'
import { StdioLineFilter } from './stdio-lines.js'

/** Options for {@link serveMcpStdio}. */
export interface ServeMcpStdioOptions {
  readonly config: ServerConfig
  readonly logger: Logger
  /** Exit the process with 0 once the session is over and the app stopped. Default true (`lango mcp`). */
  readonly exit?: boolean
}

/** Exit codes of a second signal, which ends the process at once (128 + the signal's number). */
const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const

/**
 * `lango mcp`: creates and starts the app, then serves every tool over MCP stdio (both protocol
 * eras) until the client closes stdin or the process gets SIGINT or SIGTERM; then stops the app
 * (scheduler, background tasks, exec process groups, database) and exits 0. A second signal
 * exits at once.
 *
 * stdout carries protocol messages only: logs go to fd 2, children get pipes (never fd 1), and for
 * the session's lifetime anything else in the process that writes to `process.stdout` (a
 * `console.log`, a library's banner) is sent to stderr instead; the protocol has its own writer.
 * Resolves after the app stopped (when `exit` is false); rejects when the app cannot start.
 */
export async function serveMcpStdio(options: ServeMcpStdioOptions): Promise<void> {
  const { config, logger } = options
  const stdout = guardStdout()
  // The AI SDK's and Node's warnings become log lines too, not plain text on stderr.
  const restoreWarnings = routeWarnings(logger)
  let app: App
  try {
    app = await createApp(config, logger)
  } catch (error) {
    stdout.restore()
    restoreWarnings()
    throw error
  }
  try {
    await app.start()
  } catch (error) {
    await app.stop()
    stdout.restore()
    restoreWarnings()
    throw error
  }

  const ended = sessionEnd(stdout.protocol)
  // Pending approvals live in the database: `lango approvals approve <id>` against a `lango serve`
  // on the same home answers them, and the same call made again here runs.
  const approvals = new McpApprovals(app)
  // A line that is not a JSON-RPC message gets its error reply here (the SDK would drop it unanswered).
  const lines = new StdioLineFilter((reply) => {
    logger.warn('mcp stdio line refused', { code: reply.error.code, reason: reply.error.message })
    stdout.protocol.write(`${JSON.stringify(reply)}\n`)
  })
  process.stdin.pipe(lines)
  const handle = serveStdio(() => createMcpServer(app, { approval: approvals }), {
    transport: new StdioServerTransport(lines, stdout.protocol),
    onerror: (error) => logger.warn('mcp stdio error', { error }),
  })
  logger.info('mcp stdio serving', { tools: app.tools.length, approval_policy: approvals.policy })

  const reason = await ended.reason
  // From here on, a second signal exits at once.
  ended.dispose()
  const exitNow = (signal: keyof typeof SIGNAL_EXIT_CODES) => () => process.exit(SIGNAL_EXIT_CODES[signal])
  const onInt = exitNow('SIGINT')
  const onTerm = exitNow('SIGTERM')
  process.once('SIGINT', onInt)
  process.once('SIGTERM', onTerm)
  logger.info('mcp session ended', { reason })
  // Stopping waits on unref'd handles (the checkpoint worker's exit): with stdin gone nothing else
  // keeps the event loop up, and Node would end the process halfway (exit code 13).
  const hold = setInterval(() => {}, 60_000)
  try {
    approvals.close()
    await handle.close()
    await app.stop()
  } finally {
    clearInterval(hold)
    process.off('SIGINT', onInt)
    process.off('SIGTERM', onTerm)
    stdout.restore()
    restoreWarnings()
  }
  if (options.exit !== false) process.exit(0)
}

/** Why a session ends: the client closed stdin, a signal, or stdout is gone (the client died). */
function sessionEnd(protocol: Writable): { readonly reason: Promise<string>; dispose(): void } {
  const listeners: Array<() => void> = []
  const reason = new Promise<string>((resolve) => {
    const on = (emitter: NodeJS.EventEmitter, event: string, why: string) => {
      const listener = () => resolve(why)
      emitter.once(event, listener)
      listeners.push(() => emitter.off(event, listener))
    }
    on(process.stdin, 'end', 'stdin closed')
    on(process.stdin, 'close', 'stdin closed')
    on(process, 'SIGINT', 'SIGINT')
    on(process, 'SIGTERM', 'SIGTERM')
    on(protocol, 'error', 'stdout closed')
  })
  return {
    reason,
    dispose() {
      for (const remove of listeners) remove()
    },
  }
}

/**
 * Keeps stdout for the protocol: `protocol` writes to the real stdout, while `process.stdout.write`
 * (which `console.log` and libraries use) goes to stderr until `restore()`.
 */
function guardStdout(): { readonly protocol: Writable; restore(): void } {
  const stdout = process.stdout
  const original = Object.getOwnPropertyDescriptor(stdout, 'write')
  const write = stdout.write.bind(stdout)
  const protocol = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      write(chunk, (error) => callback(error ?? null))
    },
  })
  // A client that went away: the session ends through `protocol`'s error, not an uncaught EPIPE.
  const onError = (error: Error) => protocol.destroy(error)
  stdout.on('error', onError)
  stdout.write = process.stderr.write.bind(process.stderr) as typeof stdout.write
  return {
    protocol,
    restore() {
      stdout.off('error', onError)
      if (original === undefined) delete (stdout as { write?: unknown }).write
      else Object.defineProperty(stdout, 'write', original)
    },
  }
}
