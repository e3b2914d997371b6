// The server's programmatic entry (tests and embedding hosts); `lango` is src/cli.ts.
export { type App, createApp, VERSION } from './app.js'
export { type ApprovalStatus, Approvals, type ApprovalView } from './approvals.js'
export type { ServerConfig } from './config/types.js'
export { ServerError, type ServerErrorCode } from './errors.js'
export { EventHub, type ServerEvent } from './events.js'
export { createLogger, type Logger, type LogLevel, silentLogger } from './logger.js'
