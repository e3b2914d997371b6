import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { ShellRunner } from '../src/ports.js'
import { renderCommand } from '../src/template.js'
import { RecordingAgentRunner } from '../src/testing/recording.js'
import { createHarness, type Harness } from './__fixtures__/harness.js'

const BASH = '/bin/bash'

let harness: Harness | undefined
afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

/** Runs a command with `bash -c` in `cwd` (as `/bin/sh` does on macOS, Fedora and Arch). */
function bash(command: string, cwd: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(BASH, ['-c', command], { cwd, stdio: ['ignore', 'pipe', 'ignore'] })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8')
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout }))
  })
}

const bashRunner: ShellRunner = {
  async run(request) {
    const { code, stdout } = await bash(request.command, request.cwd ?? process.cwd())
    return { exitCode: code, stdout, stderr: '' }
  },
}

// What the outside probe placed under bash: each ran the value's `$(…)`.
const EVALUATED = [
  '[[ {{a.result}} -gt 0 ]] || echo no',
  '[[ -v {{a.result}} ]] || echo no',
  '(( {{a.result}} )) || true',
  'let n={{a.result}} || true',
  'declare -i n={{a.result}}; echo $n',
  'x={{a.result}}; echo ${!x} || true',
  'printf -v {{a.result}} x || true',
  'test -v {{a.result}} || echo no',
  'a=(1 2); unset {{a.result}} || true',
  'read {{a.result}} </dev/null || true',
  'echo $[ {{a.result}} ] || true',
  'x={{a.result}}; echo $((x + 1)) || true',
]

describe.skipIf(!existsSync(BASH))('under bash, a value stays data or the workflow is refused', () => {
  it('each placement the check refuses does run a hostile value as code under bash', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'lango-workflow-bash-'))
    try {
      for (const [index, command] of EVALUATED.entries()) {
        const marker = join(directory, `ran-${index}`)
        const rendered = renderCommand(command, new Map([['a', `a[$(touch ${marker})]`]]))
        await bash(rendered, directory)
        expect(existsSync(marker), command).toBe(true)
      }
    } finally {
      await rm(directory, { recursive: true, force: true })
    }
  })

  it('refuses those workflows before anything runs; accepted placements keep the value as data', async () => {
    const h = await createHarness({
      shellRunner: bashRunner,
      agentRunner: new RecordingAgentRunner(() => 'a[$(touch result.ran)]'),
    })
    harness = h
    for (const command of EVALUATED) {
      for (const placeholder of ['{{a.result}}', '{{trigger.payload}}']) {
        const yaml = `name: t\nsteps:\n  - { id: a, prompt: go }\n  - id: b\n    depends_on: [a]\n    run: ${JSON.stringify(command.replaceAll('{{a.result}}', placeholder))}\n`
        await expect(
          h.engine.startRun(yaml, { triggerPayload: 'a[$(touch payload.ran)]' }),
          command,
        ).rejects.toMatchObject({ code: 'WORKFLOW_INVALID' })
      }
      const gated = `name: t\nsteps:\n  - { id: a, prompt: go }\n  - id: b\n    depends_on: [a]\n    when: ${JSON.stringify(command)}\n    run: "true"\n`
      await expect(h.engine.startRun(gated), command).rejects.toMatchObject({ code: 'WORKFLOW_INVALID' })
    }
    const { runId } = await h.engine.startRun(
      `name: data
steps:
  - { id: a, prompt: go }
  - id: b
    depends_on: [a]
    when: "test -n {{a.result}} && [ {{trigger.payload}} != x ]"
    run: "n={{a.result}}; printf '%s|' {{a.result}} \\"$n\\" {{trigger.payload}}; test {{a.result}} -eq 0 2>/dev/null; printf '%d' {{a.result}} 2>/dev/null; echo $(printf %s {{a.result}}) | wc -c"
`,
      { triggerPayload: 'a[$(touch payload.ran)]' },
    )
    const snapshot = await h.engine.waitForRun(runId)
    expect(snapshot.status).toBe('completed')
    expect(snapshot.steps.find((step) => step.stepId === 'b')?.result).toBe(
      'a[$(touch result.ran)]|a[$(touch result.ran)]|a[$(touch payload.ran)]|023',
    )
    expect(existsSync(join(h.directory, 'result.ran'))).toBe(false)
    expect(existsSync(join(h.directory, 'payload.ran'))).toBe(false)
  })
})
