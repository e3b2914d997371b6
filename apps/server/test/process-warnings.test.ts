import type { ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterEach, describe, expect, it } from 'vitest'
import { startLangoServe } from './fixtures/lango-serve.js'

// stderr of `lango serve` is JSON lines (the log) but for the one `lango listening on` note: a plain
// text line from Node in between breaks every reader that parses them.

const PROBE = fileURLToPath(new URL('./fixtures/node-warning.mjs', import.meta.url))

let home: string | undefined
let running: ChildProcess | undefined

afterEach(async () => {
  if (running !== undefined && running.exitCode === null && running.signalCode === null) {
    const exited = new Promise((resolve) => running?.once('exit', resolve))
    running.kill('SIGKILL')
    await exited
  }
  running = undefined
  if (home !== undefined) await rm(home, { recursive: true, force: true })
  home = undefined
})

/** Starts `lango serve`; resolves with its URL, its pid, what it writes to stderr from then on, and `stop()`. */
async function serve(env: Record<string, string> = {}) {
  home = await mkdtemp(join(tmpdir(), 'lango-warnings-'))
  const { child, url, pid } = await startLangoServe(home, env)
  running = child
  let stderr = ''
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const closed = new Promise((resolve) => child.once('close', resolve))
  return {
    url,
    pid,
    stderr: () => stderr,
    /** SIGTERM, then resolves once the process and its pipes are closed: stderr is whole. */
    async stop() {
      child.kill('SIGTERM')
      await closed
      return stderr
    },
  }
}

/** The lines of `text` that are not JSON objects. */
function plainLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .filter((line) => {
      try {
        return typeof JSON.parse(line) !== 'object'
      } catch {
        return true
      }
    })
}

describe('Node warnings from lango serve', () => {
  it('twelve calls waiting for approval at once are not taken for a listener leak', async () => {
    const server = await serve()
    // Each call waiting for approval keeps listening for the server's shutdown.
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        fetch(`${server.url}/api/tools/exec`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ command: `echo ${index}` }),
        }).then(async (response) => ({ status: response.status, body: await response.json() })),
      ),
    )
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(202))
    expect(answers[0]?.body).toMatchObject({ status: 'pending_approval' })
    const stderr = await server.stop()
    expect(stderr).not.toContain('MaxListenersExceededWarning')
    expect(plainLines(stderr)).toEqual([])
  })

  it('a warning Node emits is one JSON log line, not plain text in the log stream', async () => {
    const server = await serve({ NODE_OPTIONS: `--import=${PROBE}` })
    process.kill(server.pid, 'SIGUSR2')
    await waitFor(() => server.stderr().includes('LANGO_PROBE_WARNING'), { what: 'the warning' })
    const stderr = await server.stop()
    const line = stderr.split('\n').find((text) => text.includes('LANGO_PROBE_WARNING'))
    expect(JSON.parse(line ?? '')).toMatchObject({
      level: 'warn',
      msg: 'node warning',
      warning: 'ProbeWarning',
      code: 'LANGO_PROBE_WARNING',
      message: 'a probe of how the server prints warnings',
    })
    expect(plainLines(stderr)).toEqual([])
  })
})
