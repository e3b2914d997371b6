// The server's programmatic entry (tests and embedding hosts); `lango` is src/cli.ts.
export type { App } from './app/app.js'
export { createApp } from './app/create-app.js'
export { type ApprovalStatus, Approvals, type ApprovalView } from './approvals.js'
export {
  ConfigError,
  type ConfigErrorCode,
  type ConfigIssue,
  type LoadConfigOptions,
  loadConfig,
  redactedConfig,
} from './config/load.js'
export type { ServerConfig } from './config/types.js'
export { ServerError, type ServerErrorCode } from './errors.js'
export { EventHub, type ServerEvent } from './events.js'
export { createHttpApp, type HttpAppOptions } from './http/app.js'
export { createLogger, type Logger, type LogLevel, silentLogger } from './logger.js'
export {
  type CreateMcpServerOptions,
  createMcpHttpHandler,
  createMcpServer,
  McpApprovals,
  type McpApprovalsOptions,
  type McpHttpEndpoint,
  type McpHttpHandlerOptions,
  type ServeMcpStdioOptions,
  serveMcpStdio,
} from './mcp/index.js'
export { installShutdown, type RunningServer, type ServeOptions, serve } from './serve.js'
export { migrateVault, Vault, VaultError } from './vault/index.js'
export { VERSION } from './version.js'
