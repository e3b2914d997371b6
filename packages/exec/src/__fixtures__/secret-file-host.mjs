// A host for secret-file clean-up tests: starts a background process holding a {{secretfile:…}}
// through the built package, then exits or waits for a signal. Usage:
//   TMPDIR=<dir> node secret-file-host.mjs <exit|signal>
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { installSignalCleanup, MemoryRefStore, ProcessRegistry } from '../../dist/index.js'

const [mode] = process.argv.slice(2)
if (mode === 'signal') installSignalCleanup()
const refStore = new MemoryRefStore({ '{{secret:k}}': 'host-exit-canary-0123' })
const registry = new ProcessRegistry({ refStore })
await registry.start('sleep 30 < {{secretfile:k}}')
if (!readdirSync(tmpdir()).some((name) => name.startsWith('lango-secret-'))) throw new Error('no secret file')
process.stdout.write('ready\n')
if (mode === 'exit') process.exit(0)
setInterval(() => {}, 1_000)
