export { nodePtyDriver } from './node-pty-driver.js'
export { type PtyRunOptions, type PtyRunResult, runWithPty } from './run-with-pty.js'
