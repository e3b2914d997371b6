// MCP over stdio (`lango mcp`) and Streamable HTTP (`/mcp` of `lango serve`); re-exported by src/index.ts.
export { McpApprovals, type McpApprovalsOptions } from './approval.js'
export { createMcpHttpHandler, type McpHttpEndpoint, type McpHttpHandlerOptions } from './http.js'
export { type CreateMcpServerOptions, createMcpServer } from './server.js'
export { type ServeMcpStdioOptions, serveMcpStdio } from './stdio.js'
