/**
 * `lango doctor` and the API token (outside probe): with a token the server refuses it said
 * "no problems" and exited 0, and it said nothing of a secret too short to mask, which
 * `lango serve` warns about at start. The built CLI in a child process, as operators run it,
 * against a real server on loopback.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'
import { CLI } from './fixtures/lango-serve.js'

const TOKEN = 'doctor-right-token-7c2e'

interface Check {
  readonly name: string
  readonly status: string
  readonly message: string
  readonly fix?: string
}

let server: TestServer
let home: string
beforeAll(async () => {
  server = await startTestServer((config) => ({ ...config, server: { ...config.server, apiToken: TOKEN } }))
  home = await mkdtemp(join(tmpdir(), 'lango-doctor-token-'))
})
afterAll(async () => {
  await server?.dispose()
  if (home !== undefined) await rm(home, { recursive: true, force: true })
})

async function doctor(token: string): Promise<{ code: number | null; output: string; checks: Check[] }> {
  const child = spawn(process.execPath, [CLI, 'doctor', '--json'], {
    env: {
      ...process.env,
      LANGO_HOME: home,
      LANGO_URL: server.url,
      LANGO_API_TOKEN: token,
      LANGO_LOG_LEVEL: 'warn',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  return { code, output: stdout + stderr, checks: (JSON.parse(stdout) as { checks: Check[] }).checks }
}

it('fails (exit 1) when the server refuses the API token, saying which to set', async () => {
  const wrong = await doctor('doctor-wrong-token-9a4d')
  expect(wrong.code).toBe(1)
  expect(wrong.checks.find((check) => check.name === 'server')).toMatchObject({
    status: 'fail',
    message: expect.stringContaining('refuses the API token'),
    fix: expect.stringContaining('LANGO_API_TOKEN'),
  })
  expect(wrong.output).not.toContain('doctor-wrong-token-9a4d')
  expect(wrong.output).not.toContain(TOKEN)
  const right = await doctor(TOKEN)
  expect(right.checks.find((check) => check.name === 'server')).toMatchObject({ status: 'ok' })
  expect(right.checks.find((check) => check.name === 'secret lengths')).toMatchObject({ status: 'ok' })
})

it('warns about a configured secret too short to mask, by its setting, never its value', async () => {
  const short = await doctor('Xq7#Lm2')
  expect(short.checks.find((check) => check.name === 'secret lengths')).toMatchObject({
    status: 'warn',
    message: expect.stringMatching(/^server\.api_token is shorter than 8 characters: too short to mask/),
    fix: expect.stringContaining('at least 8 characters'),
  })
  expect(short.output).not.toContain('Xq7#Lm2')
})
