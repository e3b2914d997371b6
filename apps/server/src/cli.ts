#!/usr/bin/env node
// `lango`: the bin entry (package.json "bin"). Everything lives in src/cli/; this file only exits.
import { runCli } from './cli/program.js'

const { exitCode, keepRunning } = await runCli(process.argv.slice(2))
if (!keepRunning) {
  process.exitCode = exitCode
  // Exit once stdout has taken everything written: a client command is done, and nothing it
  // opened (a keep-alive socket, a worker) should hold the terminal.
  process.stdout.write('', () => process.exit(exitCode))
}
