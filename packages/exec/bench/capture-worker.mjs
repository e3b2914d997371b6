// One contender of the capture benchmark, alone in its process: prints {ms, maxRssKiB}.
import { spawn } from 'node:child_process'
import { run } from '../dist/index.js'

const command = 'head -c 100000000 /dev/zero'
const mode = process.argv[2]
const start = performance.now()
if (mode === 'ours') {
  const result = await run(command, { timeoutMs: 60_000 })
  if (!result.truncated) throw new Error('expected truncation')
} else {
  await new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] })
    child.stdout.on('data', () => {})
    child.stderr.on('data', () => {})
    child.once('error', reject)
    child.once('close', resolve)
  })
}
const ms = performance.now() - start
process.stdout.write(JSON.stringify({ ms, maxRssKiB: process.resourceUsage().maxRSS }))
