#!/usr/bin/env node
// `lango`: the bin entry (package.json "bin"). Everything lives in src/cli/; this file only exits.
import { environmentWithSecrets } from './cli/handover.js'
import { runCli } from './cli/program.js'

const argv = process.argv.slice(2)
// Secrets given in the environment to a command that runs commands are handed to a server process
// whose ancestors do not hold them (src/cli/handover.ts); this process may become its supervisor.
const env = await environmentWithSecrets(argv)
const { exitCode, keepRunning } = await runCli(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env,
})
if (!keepRunning) {
  process.exitCode = exitCode
  // Exit once stdout has taken everything written: a client command is done, and nothing it
  // opened (a keep-alive socket, a worker) should hold the terminal.
  process.stdout.write('', () => process.exit(exitCode))
}
