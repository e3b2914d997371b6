/**
 * node-pty is an optional dependency: where npm could not build it (or `@lango/exec` cannot reach
 * the server's copy, as in an outside probe's global install) `lango serve` must still start and
 * run commands without a terminal, `pty: true` must fail saying why, and `lango doctor` must say
 * so. The server exited at start with "node-pty is not installed", and doctor said it spawned a
 * terminal. node-pty's failure is the outside world here: a preload makes its `require` throw.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runLango, startLangoServe } from './fixtures/lango-serve.js'

const PRELOAD = fileURLToPath(new URL('./fixtures/no-node-pty.cjs', import.meta.url))
const env = { NODE_OPTIONS: `--require=${PRELOAD}` }

let home: string
let server: Awaited<ReturnType<typeof startLangoServe>> | undefined

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-no-pty-'))
  // The operator's own calls over HTTP, without a person to approve them.
  await writeFile(join(home, 'lango.yaml'), 'approvals:\n  policy: none\n')
  server = await startLangoServe(home, env)
})
afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill('SIGTERM')
    await new Promise((resolve) => server?.child.once('exit', resolve))
  }
  await rm(home, { recursive: true, force: true })
})

const call = async (tool: string, params: Record<string, unknown>) => {
  const response = await fetch(`${server?.url}/api/tools/${tool}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(params),
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

it('serves without node-pty: commands run, pty: true fails saying why, doctor warns', async () => {
  expect((await fetch(`${server?.url}/healthz`)).status).toBe(200)
  expect(await call('exec', { command: 'echo plain' })).toMatchObject({
    status: 200,
    body: { result: { exit_code: 0, stdout: 'plain\n' } },
  })
  const background = await call('exec_bg', { command: 'echo hi', pty: true })
  expect(background.status).toBeGreaterThanOrEqual(400)
  expect(JSON.stringify(background.body)).toMatch(/pty|terminal/i)
  const foreground = await call('exec', { command: 'echo hi', pty: true })
  expect(JSON.stringify(foreground.body)).toMatch(/node-pty/)

  const doctor = await runLango(['doctor', '--json', '--url', server?.url as string], {
    ...env,
    LANGO_HOME: home,
  })
  const checks = (
    JSON.parse(doctor.stdout) as { checks: { name: string; status: string; message: string }[] }
  ).checks
  expect(checks.find((check) => check.name === 'node-pty')).toMatchObject({
    status: 'warn',
    message: expect.stringContaining('not installed (optional)'),
  })
})
