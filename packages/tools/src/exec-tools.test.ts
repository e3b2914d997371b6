import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { blockLangoExec, createEnvBuilder, MemoryRefStore, ProcessRegistry, run } from '@lango/exec'
import { nodePtyDriver, runWithPty } from '@lango/exec/pty'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { ApprovalGate, ApprovalRequest } from './approval.js'
import { createExecTools } from './exec-tools.js'
import { invokeTool } from './invoke.js'
import type { AnyTool } from './tool.js'

let dir: string
let registry: ProcessRegistry
let tools: Map<string, AnyTool>
const refStore = new MemoryRefStore({ '{{secret:api-key}}': 'sk-tools-canary-991' })

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lango-tools-'))
  registry = new ProcessRegistry({ refStore, ptyDriver: nodePtyDriver(), killGraceMs: 300 })
  const list = createExecTools({
    backend: {
      run: (command, options) => run(command, { ...options, refStore }),
      runWithPty: (command, options) => runWithPty(command, { ...options, refStore }),
      registry,
      blockLangoExec,
    },
    automationAvailable: { cron: true, background: true, workflow: false },
  })
  tools = new Map(list.map((tool) => [tool.name, tool]))
})
afterEach(async () => {
  await registry.stop()
  await rm(dir, { recursive: true, force: true })
})

const call = (name: string, params: unknown) =>
  invokeTool(tools.get(name) as AnyTool, params, {}, { policy: 'none' })

describe('exec tools (seed 001, ARCHITECTURE §7)', () => {
  it('refuses env overrides the spawner would refuse before anyone is asked to approve (outside probe)', async () => {
    // A person approved `ls` with LD_PRELOAD set, and only then did the call fail EXEC_ENV_REJECTED.
    const env = createEnvBuilder()
    const checked = createExecTools({
      backend: {
        run: (command, options) => run(command, { ...options, refStore }),
        registry,
        blockLangoExec,
        checkEnv: (overrides) => {
          env.build({ overrides, overrideSource: 'agent', replace: true })
        },
      },
    })
    const asked: ApprovalRequest[] = []
    const gate: ApprovalGate = {
      request: async (request) => {
        asked.push(request)
        return true
      },
    }
    for (const name of ['exec', 'exec_bg']) {
      const tool = checked.find((candidate) => candidate.name === name) as AnyTool
      const outcome = await invokeTool(
        tool,
        { command: 'ls', env: { LD_PRELOAD: '/tmp/evil.so' } },
        {},
        { gate },
      )
      expect(outcome, name).toMatchObject({
        ok: false,
        error: {
          code: 'TOOL_FAILED',
          reason: 'EXEC_ENV_REJECTED',
          message: expect.stringContaining('LD_PRELOAD'),
        },
      })
    }
    expect(asked).toEqual([])
    // An override it allows is still asked about, and runs.
    const exec = checked.find((candidate) => candidate.name === 'exec') as AnyTool
    const allowed = await invokeTool(exec, { command: 'echo $REPORT', env: { REPORT: 'ok' } }, {}, { gate })
    expect(allowed).toMatchObject({ ok: true, result: { stdout: 'ok\n' } })
    expect(asked).toHaveLength(1)
  })

  it('exec returns the contract result', async () => {
    const outcome = await call('exec', { command: 'echo hi; echo oops >&2; exit 4', cwd: dir })
    expect(outcome).toEqual({
      ok: true,
      result: {
        exit_code: 4,
        stdout: 'hi\n',
        stderr: 'oops\n',
        timed_out: false,
        duration_ms: expect.any(Number),
        truncated: false,
      },
    })
  })

  it('exec honours timeout in seconds and reports timed_out with the output so far', async () => {
    const outcome = await call('exec', { command: 'echo early; sleep 30', timeout: 1 })
    expect(outcome).toMatchObject({ ok: true, result: { timed_out: true, stdout: 'early\n' } })
  })

  it('exec runs on a PTY and strips ANSI when asked', async () => {
    const outcome = await call('exec', {
      command: "test -t 1 && printf '\\033[1mtty\\033[0m'",
      pty: true,
      strip_ansi: true,
    })
    expect(outcome).toMatchObject({ ok: true, result: { exit_code: 0, stdout: 'tty' } })
  })

  it('exec resolves secret references and masks them', async () => {
    const outcome = await call('exec', { command: 'echo {{secret:api-key}}' })
    expect(outcome).toMatchObject({ ok: true, result: { stdout: '[secret:api-key]\n' } })
  })

  it.each([
    ['exec', 'lango cron list', /cron_add/],
    ['exec', 'cd /tmp && LANGO SECURITY DB-MIGRATE', /terminal|security/i],
    ['exec_bg', 'lango bg list', /bg_submit/],
    ['exec_bg', 'nohup lango workflow run x &', /enable/i],
  ])('%s blocks %j without running it', async (name, command, guidance) => {
    const marker = join(dir, 'ran')
    const outcome = await call(name, { command: `touch ${marker}; ${command}` })
    expect(outcome).toMatchObject({
      ok: true,
      result: { blocked: true, message: expect.stringMatching(guidance) },
    })
    expect(registry.list()).toHaveLength(0)
    await expect(import('node:fs/promises').then((fs) => fs.stat(marker))).rejects.toThrow()
  })

  it('a blocked lango command never asks the approval gate; an allowed one does', async () => {
    const asked: ApprovalRequest[] = []
    const gate: ApprovalGate = {
      async request(request) {
        asked.push(request)
        return true
      },
    }
    for (const [name, command] of [
      ['exec', 'lango cron list'],
      ['exec_bg', 'sudo /usr/local/bin/lango workflow run x'],
    ] as const) {
      const outcome = await invokeTool(tools.get(name) as AnyTool, { command }, {}, { policy: 'all', gate })
      expect(outcome).toMatchObject({ ok: true, result: { blocked: true, message: expect.any(String) } })
      expect((tools.get(name) as AnyTool).isFailure?.((outcome as { result: unknown }).result)).toBe(true)
    }
    expect(asked).toEqual([])
    expect(registry.list()).toHaveLength(0)
    const allowed = await invokeTool(
      tools.get('exec') as AnyTool,
      { command: 'echo fine' },
      {},
      { policy: 'all', gate },
    )
    expect(allowed).toMatchObject({ ok: true, result: { exit_code: 0, stdout: 'fine\n' } })
    expect(asked.map((request) => request.summary)).toEqual(['Execute: ⟦echo fine⟧'])
  })

  it('exec_bg, exec_status, exec_write and exec_stop drive a PTY session', async () => {
    const started = await call('exec_bg', {
      command: 'printf "name? "; read n; echo "hi $n"; sleep 30',
      pty: true,
    })
    expect(started).toMatchObject({
      ok: true,
      result: { id: expect.any(String), pid: expect.any(Number), status: 'running' },
    })
    const id = (started as { result: { id: string } }).result.id
    let status: { output: string; next_offset: number } | undefined
    // Polled until the prompt shows, for 15 s at most (generous on a loaded machine).
    const deadline = Date.now() + 15_000
    for (;;) {
      const outcome = (await call('exec_status', { id })) as {
        result: { output: string; next_offset: number }
      }
      status = outcome.result
      if (status.output.includes('name?') || Date.now() > deadline) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(status?.output).toContain('name?')
    expect(await call('exec_write', { id, input: 'agent\r' })).toEqual({
      ok: true,
      result: { id, written: 6 },
    })
    let later = ''
    const answered = Date.now() + 15_000
    while (!later.includes('hi agent') && Date.now() < answered) {
      const outcome = (await call('exec_status', { id, offset: status?.next_offset })) as {
        result: { output: string }
      }
      later += outcome.result.output
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(later).toContain('hi agent')
    expect(await call('exec_stop', { id })).toEqual({ ok: true, result: { id, status: 'killed' } })
    const final = await call('exec_status', { id })
    expect(final).toMatchObject({
      ok: true,
      result: {
        id,
        status: 'killed',
        command: 'printf "name? "; read n; echo "hi $n"; sleep 30',
        ended_at: expect.any(String),
      },
    })
  })

  it('errors from the backend become tool errors with the reason code', async () => {
    expect(await call('exec', { command: 'true', cwd: join(dir, 'missing') })).toMatchObject({
      ok: false,
      error: { code: 'TOOL_FAILED', reason: 'EXEC_INVALID_CWD', message: expect.stringContaining('missing') },
    })
    expect(await call('exec', { command: 'true', env: { LD_PRELOAD: 'x.so' } })).toMatchObject({
      ok: false,
      error: { reason: 'EXEC_ENV_REJECTED', message: expect.stringContaining('LD_PRELOAD') },
    })
    expect(await call('exec_status', { id: 'nope' })).toMatchObject({
      ok: false,
      error: { reason: 'EXEC_PROCESS_NOT_FOUND' },
    })
  })
})
