// A host for the inherited-descriptor test: optionally closes what it inherited (through the built
// package), then runs `ls -l /proc/$$/fd` in a plain and in a PTY child and prints both. Usage:
//   node inherited-fd-host.mjs <close|keep>
import { closeInheritedDescriptors, run } from '../../dist/index.js'
import { runWithPty } from '../../dist/pty.js'

const [mode] = process.argv.slice(2)
const closed = mode === 'close' ? closeInheritedDescriptors() : []
const plain = await run('ls -l /proc/$$/fd')
const pty = await runWithPty('ls -l /proc/$$/fd', { timeoutMs: 10_000 })
process.stdout.write(`${JSON.stringify({ closed, plain: plain.stdout, pty: pty.stdout })}\n`)
