import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from '@lango/vitest-config/wait-for'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLI, startLangoServe } from './fixtures/lango-serve.js'
import { type LangoMcp, startLangoMcp, type ToolResult } from './fixtures/mcp-stdio-client.js'

// Issue 12 across processes: a real `lango serve` and real `lango mcp` processes (the built CLI)
// on one LANGO_HOME, so one SQLite database. The MCP client declares no elicitation, so a
// dangerous call becomes a pending approval in the database, which the real `lango approvals` CLI
// answers through the server. `pnpm test` builds first.

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

let home: string
let langoHome: string
let serve: ChildProcess | undefined
let url: string
const clients: LangoMcp[] = []

/** Runs `lango …` to its end against the test's server. */
function lango(args: readonly string[]): Promise<Result> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, LANGO_HOME: langoHome, LANGO_URL: url, LANGO_LOG_LEVEL: 'warn', NO_COLOR: '1' },
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
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

async function langoJson<T>(args: readonly string[]): Promise<Result & { data: T }> {
  const result = await lango([...args, '--json'])
  return { ...result, data: JSON.parse(result.stdout) as T }
}

interface ApprovalJson {
  id: string
  status: string
  tool: string
  summary: string
  origin: string
  decided_by: string | null
  outcome: unknown
}

function approvalOf(result: ToolResult): ApprovalJson {
  return (result.structuredContent as { approval: ApprovalJson }).approval
}

/** Lines of a file the approved commands append to (in the MCP server's working directory). */
async function linesOf(name: string): Promise<string[]> {
  const file = join(home, name)
  if (!existsSync(file)) return []
  return (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '')
}

async function startMcp(timeout: string): Promise<LangoMcp> {
  const client = await startLangoMcp({
    home,
    yaml: `approvals:\n  mcp_policy: dangerous\n  timeout: ${timeout}\n`,
  })
  clients.push(client)
  return client
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-approvals-processes-'))
  langoHome = join(home, '.lango')
  await mkdir(langoHome, { recursive: true, mode: 0o700 })
  await writeFile(join(langoHome, 'lango.yaml'), 'approvals:\n  mcp_policy: dangerous\n  timeout: 30s\n')
  const started = await startLangoServe(langoHome)
  serve = started.child
  url = started.url
})

afterAll(async () => {
  for (const client of clients) {
    await client.client.close().catch(() => {})
    if (client.child.exitCode === null) client.child.kill('SIGKILL')
  }
  if (serve !== undefined && serve.exitCode === null) {
    const exited = new Promise((resolve) => serve?.once('exit', resolve))
    serve.kill('SIGTERM')
    await exited
  }
  if (home !== undefined) await rm(home, { recursive: true, force: true })
})

describe('lango mcp (stdio, no elicitation) and lango serve on one LANGO_HOME', () => {
  it('the CLI approves a pending approval of lango mcp through the server; the same call then runs once', async () => {
    const mcp = await startMcp('30s')
    const command = { command: 'echo once >> approved-runs.txt' }
    const first = await mcp.call('exec', command)
    expect(first).toMatchObject({
      isError: true,
      structuredContent: {
        error: {
          code: 'SERVER_APPROVAL_PENDING',
          message: expect.stringContaining('lango approvals approve'),
        },
        approval: { status: 'pending', tool: 'exec', summary: 'Execute: ⟦echo once >> approved-runs.txt⟧' },
      },
    })
    const { id } = approvalOf(first)
    expect(await linesOf('approved-runs.txt')).toEqual([])

    // The server lists the approval lango mcp asked for.
    const listed = await langoJson<{ approvals: ApprovalJson[] }>([
      'approvals',
      'list',
      '--status',
      'pending',
    ])
    expect(listed.code).toBe(0)
    const mine = listed.data.approvals.find((approval) => approval.id === id)
    expect(mine).toMatchObject({
      status: 'pending',
      tool: 'exec',
      summary: 'Execute: ⟦echo once >> approved-runs.txt⟧',
    })

    const approved = await langoJson<ApprovalJson>(['approvals', 'approve', id])
    expect(approved.code, approved.stderr).toBe(0)
    expect(approved.data).toMatchObject({ id, status: 'approved' })
    // Answered in the server's process, not the one that asked.
    expect(approved.data.decided_by).not.toBe(mine?.origin)

    const ran = await mcp.call('exec', command)
    expect(ran.isError).toBeFalsy()
    expect(ran.structuredContent).toMatchObject({ exit_code: 0 })
    expect(await linesOf('approved-runs.txt')).toEqual(['once'])
    // The outcome lango mcp recorded is what the server shows.
    const shown = (await (await fetch(`${url}/api/approvals/${id}`)).json()) as ApprovalJson
    expect(shown).toMatchObject({ status: 'approved', outcome: { ok: true, result: { exit_code: 0 } } })

    // A second retry is not approved again: it asks anew, and nothing runs.
    const again = await mcp.call('exec', command)
    expect(again.structuredContent).toMatchObject({ error: { code: 'SERVER_APPROVAL_PENDING' } })
    expect(approvalOf(again).id).not.toBe(id)
    expect(await linesOf('approved-runs.txt')).toEqual(['once'])

    // A denial through the API is reported to the retry once.
    const denied = await fetch(`${url}/api/approvals/${approvalOf(again).id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'deny' }),
    })
    expect(((await denied.json()) as ApprovalJson).status).toBe('denied')
    expect(await mcp.call('exec', command)).toMatchObject({
      isError: true,
      structuredContent: {
        error: { code: 'TOOL_DENIED', message: expect.stringContaining('the user denied it') },
      },
    })
    expect(await linesOf('approved-runs.txt')).toEqual(['once'])
  })

  it('an unanswered approval expires: the retry is denied, the CLI is told so, nothing runs', async () => {
    // A retry uses an expired answer only within one approval timeout of the expiry (later it asks
    // anew): the retry comes first, right after the expiry is seen, and the timeout leaves it ample
    // room on a loaded machine; the CLI, whose start alone can take seconds there, comes after.
    const mcp = await startMcp('3s')
    const command = { command: 'echo late >> late-runs.txt' }
    const { id } = approvalOf(await mcp.call('exec', command))
    let status = 'pending'
    await waitFor(
      async () => {
        const view = (await (await fetch(`${url}/api/approvals/${id}`)).json()) as ApprovalJson
        status = view.status
        return status !== 'pending'
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    )
    expect(status).toBe('expired')
    expect(await mcp.call('exec', command)).toMatchObject({
      isError: true,
      structuredContent: {
        error: { code: 'TOOL_DENIED', message: expect.stringContaining('nobody answered it in time') },
        approval: { id, status: 'expired' },
      },
    })
    const late = await lango(['approvals', 'approve', id])
    expect(late.code).toBe(1)
    expect(late.stderr).toContain('already expired')
    expect(await linesOf('late-runs.txt')).toEqual([])
  })
})

describe('a lango serve killed while a call waits for approval', () => {
  it('the next server on the home cancels that approval: nobody could run the call', async () => {
    const deadHome = await mkdtemp(join(tmpdir(), 'lango-approvals-dead-'))
    const servers: ChildProcess[] = []
    try {
      const first = await startLangoServe(deadHome)
      servers.push(first.child)
      const response = await fetch(`${first.url}/api/tools/exec`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ command: 'echo never-run' }),
      })
      expect(response.status).toBe(202)
      const { approval_id: id } = (await response.json()) as { approval_id: string }
      const killed = new Promise((resolve) => first.child.once('exit', resolve))
      first.child.kill('SIGKILL')
      await killed

      const second = await startLangoServe(deadHome)
      servers.push(second.child)
      const view = (await (await fetch(`${second.url}/api/approvals/${id}`)).json()) as ApprovalJson
      expect(view).toMatchObject({ id, status: 'cancelled' })
      expect(view.decided_by).not.toBe(view.origin)
    } finally {
      for (const child of servers)
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve))
          child.kill('SIGTERM')
          await exited
        }
      await rm(deadHome, { recursive: true, force: true })
    }
  })
})
