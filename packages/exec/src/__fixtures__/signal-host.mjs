// A host process for signal-cleanup tests: starts real process trees through the built package,
// prints their pids, and waits to be signalled. Usage: node signal-host.mjs <mode> <pid-file>
//   mode = install | own-handler | none | reaper
import { readFile } from 'node:fs/promises'
import {
  ensureOrphanReaper,
  hostRunId,
  installSignalCleanup,
  ProcessRegistry,
  run,
} from '../../dist/index.js'
import { runWithPty } from '../../dist/pty.js'

const [mode, pidFile] = process.argv.slice(2)
if (mode === 'reaper') ensureOrphanReaper()
else if (mode !== 'none') installSignalCleanup()
if (mode === 'own-handler') {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'])
    process.on(signal, () => {
      process.stdout.write(`host handled ${signal}\n`)
      setTimeout(() => process.exit(0), 200)
    })
}

// Each tree: the shell, a child subshell and a grandchild, all recording their pids.
const tree = `(sleep 300 & echo $! >> ${pidFile}; wait) & echo $! >> ${pidFile}; echo $$ >> ${pidFile}; wait`
// One more that leaves the group (job control) with its output redirected.
const jobControl = `bash -c 'set -m; sleep 302 > /dev/null 2>&1 & echo $! >> ${pidFile}'; ${tree}`
void run(tree, { timeoutMs: 600_000 })
void runWithPty(tree, { timeoutMs: 600_000 })
const registry = new ProcessRegistry()
await registry.start(jobControl)

for (;;) {
  const pids = (await readFile(pidFile, 'utf8').catch(() => '')).split(/\s+/).filter(Boolean)
  if (pids.length >= 10) break
  await new Promise((resolve) => setTimeout(resolve, 20))
}
process.stdout.write(`run-id ${hostRunId()}\nready\n`)
setInterval(() => {}, 1_000)
