// The runnable main job until the server lands: a tour of @lango/exec on this machine.
import { blockLangoExec, MemoryRefStore, ProcessRegistry, run } from '@lango/exec'
import { nodePtyDriver, runWithPty } from '@lango/exec/pty'

const refStore = new MemoryRefStore({ '{{secret:demo-token}}': 'tok-3f9a1c22e7' })

const hello = await run('echo "hello from $(uname -s)"; echo "token is {{secret:demo-token}}" >&2', {
  refStore,
  timeoutMs: 5_000,
})
console.log('run      →', hello.message)
console.log('  stdout:', hello.stdout.trim())
console.log('  stderr:', hello.stderr.trim(), '(the child saw the real value; you see a mask)')

// A file token: the program reads the value from a private file, so it is in no process's argv.
const file = await run('stat -c "%A" {{secretfile:demo-token}}; wc -c < {{secretfile:demo-token}}', {
  refStore,
})
console.log('file     →', file.stdout.trim().split('\n').join(' | '), '(removed when the command ended)')

const slow = await run('echo started; sleep 10', { timeoutMs: 300, killGraceMs: 200 })
console.log('timeout  →', slow.message, '| output so far:', JSON.stringify(slow.stdout))

const terminal = await runWithPty('test -t 1 && echo "a real terminal: $(tty)"', { stripAnsi: true })
console.log('pty      →', terminal.stdout.trim())

const registry = new ProcessRegistry({ refStore, ptyDriver: nodePtyDriver() })
try {
  const job = await registry.start('for i in 1 2 3; do echo tick $i; sleep 0.1; done')
  await job.wait()
  console.log('bg       →', job.snapshot().status, JSON.stringify(job.read(0).output))
} finally {
  await registry.stop()
}

for (const command of ['lango cron list', 'sudo /usr/local/bin/LANGO doctor', 'cat lango.yaml']) {
  const message = blockLangoExec(command, { automationAvailable: true })
  console.log(
    'guard    →',
    JSON.stringify(command),
    message === '' ? 'allowed' : `blocked: ${message.split('\n')[0]}`,
  )
}
