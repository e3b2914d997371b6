/**
 * A descriptor `lango serve` inherited open (a job runner's pipe at a high number, which Node does not
 * mark close-on-exec) never reaches a command it runs: an outside probe found fd 251 of its runner in
 * every `exec`, PTY ones included. A cron shell job lists its own descriptors. Linux (`/proc`); with
 * and without a supervisor (a secret in the environment makes one). A secret given as a descriptor
 * (`lango serve 40</run/secret` with `LANGO_API_TOKEN_FILE=/dev/fd/40`) is still read.
 */
import { closeSync, existsSync, openSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { announcedUrl, runShellJobOnce, spawnServe } from './fixtures/lango-serve.js'

/** The leaked descriptor's number in `lango serve`: past 0–15 and a gap. */
const LEAKED = 40
const TOKEN = 'inherited-descriptors-api-token-0123456789'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

describe.skipIf(!existsSync('/proc/self/fdinfo'))('descriptors lango serve inherited', () => {
  it.each([
    ['without a supervisor', {}],
    ['with a supervisor', { LANGO_API_TOKEN: TOKEN }],
  ])('never reach a command it runs (%s)', async (_name, secrets: Record<string, string>) => {
    const home = await mkdtemp(join(tmpdir(), 'lango-fds-'))
    cleanups.push(() => rm(home, { recursive: true, force: true }))
    const stdio: ('pipe' | 'ignore')[] = ['ignore', 'pipe', 'pipe']
    while (stdio.length < LEAKED) stdio.push('ignore')
    stdio.push('pipe')
    const { child, stop } = spawnServe(home, secrets, stdio)
    cleanups.push(stop)
    const url = await announcedUrl(child)
    const run = await runShellJobOnce(url, TOKEN, 'fds', 'ls -l /proc/$$/fd')
    expect(run.status).toBe('completed')
    const listing = String(run.result)
    expect(listing).toMatch(/\s1 -> /)
    expect(listing).not.toMatch(new RegExp(`\\s${LEAKED} -> `))
  })

  it.each([
    ['without a supervisor', {}],
    ['with a supervisor', { LANGO_MODEL_API_KEY: 'inherited-descriptors-model-key-0123456789' }],
  ])(
    'a _FILE naming one, open on a file (deleted since), is read from it; the descriptor still reaches no command (%s)',
    async (_name, secrets: Record<string, string>) => {
      const home = await mkdtemp(join(tmpdir(), 'lango-fds-'))
      cleanups.push(() => rm(home, { recursive: true, force: true }))
      const secretFile = join(home, 'api-token')
      await writeFile(secretFile, `${TOKEN}\n`, { mode: 0o600 })
      const fd = openSync(secretFile, 'r')
      cleanups.push(async () => closeSync(fd))
      // Read from the descriptor, not the path: the file is gone by the time the server starts.
      await rm(secretFile)
      const stdio: ('pipe' | 'ignore' | number)[] = ['ignore', 'pipe', 'pipe']
      while (stdio.length < LEAKED) stdio.push('ignore')
      stdio.push(fd)
      const { child, stop } = spawnServe(
        home,
        { ...secrets, LANGO_API_TOKEN_FILE: `/dev/fd/${LEAKED}` },
        stdio,
      )
      cleanups.push(stop)
      const url = await announcedUrl(child)
      // The token was read: the API wants it.
      expect((await fetch(`${url}/api/cron/jobs`)).status).toBe(401)
      const run = await runShellJobOnce(url, TOKEN, 'fds', 'ls -l /proc/$$/fd')
      expect(run.status).toBe('completed')
      expect(String(run.result)).not.toMatch(new RegExp(`\\s${LEAKED} -> `))
    },
  )

  it("a _FILE naming one open on a pipe (bash's <(…)) is refused at start, saying what to give instead", async () => {
    const home = await mkdtemp(join(tmpdir(), 'lango-fds-'))
    cleanups.push(() => rm(home, { recursive: true, force: true }))
    const stdio: ('pipe' | 'ignore')[] = ['ignore', 'pipe', 'pipe']
    while (stdio.length < LEAKED) stdio.push('ignore')
    stdio.push('pipe')
    const { child, stop } = spawnServe(home, { LANGO_API_TOKEN_FILE: `/dev/fd/${LEAKED}` }, stdio)
    cleanups.push(stop)
    let stderr = ''
    child.stderr?.on('data', (chunk) => {
      stderr += chunk
    })
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code).not.toBe(0)
    expect(stderr).toContain('LANGO_API_TOKEN_FILE')
    expect(stderr).toContain('name the file by its path')
  })
})
