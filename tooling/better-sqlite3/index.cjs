'use strict'
// The workspace's `better-sqlite3` (every package aliases it here): 12.x on Node 20, whose Node-API
// line 13.x does not load there; 13.x on Node 22 and later, where 12.x's raw ObjectWrap can abort the
// process (`Assertion failed: (env) != nullptr`) when a statement is finalized by the garbage
// collector, at exit or mid-run (ADR 0007).
const major = Number(process.versions.node.split('.')[0])
if (major < 22) {
  module.exports = require('better-sqlite3')
} else {
  try {
    module.exports = require('better-sqlite3-v13')
  } catch (error) {
    if (error?.code !== 'MODULE_NOT_FOUND') throw error
    throw new Error(
      `better-sqlite3 13 is needed on Node ${process.versions.node} and is not installed: run \`pnpm install\` with this Node (it is an optional dependency that Node 20 skips)`,
      { cause: error },
    )
  }
}
