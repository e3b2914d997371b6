/**
 * An outside probe: a misspelt option (`maxConcurentRuns`, `deliver_to` for `deliverTo`) was dropped
 * without a word, and the rendered-input cap counted characters, so multi-byte text could pass
 * three times the 128 KiB it promises. Through the public API.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  parseWorkflow,
  type ShellRunner,
  type ShellRunRequest,
  WorkflowDirectory,
  WorkflowEngine,
  WorkflowError,
} from '../src/index.js'
import { MemoryWorkflowStore } from '../src/testing/index.js'

const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** The WorkflowError `action` throws (synchronously or by rejecting); fails the test for anything else. */
async function caught(action: () => unknown): Promise<WorkflowError> {
  let error: unknown
  try {
    await action()
  } catch (thrown) {
    error = thrown
  }
  expect(WorkflowError.is(error), `not a WorkflowError: ${String(error)}`).toBe(true)
  return error as WorkflowError
}

const unknownOption = (option: string, suggestion?: string) =>
  expect.objectContaining({
    code: 'WORKFLOW_INVALID_OPTION',
    message: expect.stringContaining(`unknown option "${option.split('.').at(-1)}"`),
    data: expect.objectContaining({
      option,
      accepted: expect.any(Array),
      ...(suggestion === undefined ? {} : { suggestion }),
    }),
  })

/** A ShellRunner (a port) answering each step from `outputs`, recording the commands it got. */
function scriptedShell(outputs: Record<string, string>): ShellRunner & { calls: ShellRunRequest[] } {
  const calls: ShellRunRequest[] = []
  return {
    calls,
    run: async (request) => {
      calls.push(request)
      return { exitCode: 0, stdout: outputs[request.stepId] ?? '', stderr: '' }
    },
  }
}

async function startedEngine(options: Partial<ConstructorParameters<typeof WorkflowEngine>[0]> = {}) {
  const store = new MemoryWorkflowStore()
  const engine = new WorkflowEngine({ store, ...options })
  await engine.start()
  cleanups.push(() => engine.stop())
  return { engine, store }
}

const YAML = 'name: a\nsteps:\n  - { id: x, run: "true" }\n'

describe('unknown option keys', () => {
  it('the engine refuses a misspelt option, naming it, the closest key and what is accepted', async () => {
    const error = await caught(
      () => new WorkflowEngine({ store: new MemoryWorkflowStore(), maxConcurentRuns: 3 } as never),
    )
    expect(error).toEqual(unknownOption('maxConcurentRuns', 'maxConcurrentRuns'))
    expect(error.message).toMatch(
      /^unknown option "maxConcurentRuns" in WorkflowEngine options \(did you mean "maxConcurrentRuns"\?\); accepted: store, agentRunner, /,
    )
    expect(await caught(() => new WorkflowEngine({ stroe: new MemoryWorkflowStore() } as never))).toEqual(
      unknownOption('stroe', 'store'),
    )
    expect(
      await caught(
        () =>
          new WorkflowEngine({
            store: new MemoryWorkflowStore(),
            retention: { maxAgeMs: 1000, maxRuns: 5, maxRun: 4 },
          } as never),
      ),
    ).toEqual(unknownOption('retention.maxRun', 'maxRuns'))
    expect(
      await caught(() => new WorkflowEngine({ store: new MemoryWorkflowStore(), autoPrune: 'no' } as never)),
    ).toMatchObject({ code: 'WORKFLOW_INVALID_OPTION', data: { option: 'autoPrune' } })
  })

  it('startRun refuses an unknown key and stores nothing', async () => {
    const shell = scriptedShell({})
    const { engine, store } = await startedEngine({ shellRunner: shell })
    expect(await caught(() => engine.startRun(YAML, { deliver_to: ['telegram:1'] } as never))).toEqual(
      unknownOption('deliver_to', 'deliverTo'),
    )
    expect(await store.listRuns()).toEqual([])
    expect(shell.calls).toEqual([])
  })

  it('every other call with options refuses unknown keys too', async () => {
    const { engine } = await startedEngine({ shellRunner: scriptedShell({}) })
    const { runId } = await engine.startRun(YAML)
    await engine.waitForRun(runId)
    expect(await caught(() => engine.waitForRun(runId, { timeout: 5 } as never))).toEqual(
      unknownOption('timeout', 'timeoutMs'),
    )
    expect(await caught(() => engine.rerunRun(runId, { from_step: 'x' } as never))).toEqual(
      unknownOption('from_step', 'fromStep'),
    )
    expect(await caught(() => engine.planRerun(runId, { fromStpe: 'x' } as never))).toEqual(
      unknownOption('fromStpe', 'fromStep'),
    )
    expect(await caught(() => engine.listRuns({ state: 'running' } as never))).toEqual(
      unknownOption('state', 'status'),
    )
    expect(await caught(() => engine.cancelRun(runId, { signl: undefined } as never))).toEqual(
      unknownOption('signl', 'signal'),
    )
    expect(await caught(() => engine.load(YAML, { limit: {} } as never))).toEqual(
      unknownOption('limit', 'limits'),
    )
    expect(await caught(() => parseWorkflow(YAML, { limts: {} } as never))).toEqual(
      unknownOption('limts', 'limits'),
    )
    const dir = await mkdtemp(join(tmpdir(), 'lango-wf-keys-'))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    expect(
      await caught(() => WorkflowDirectory.open(join(dir, 'flows'), { allowedRoot: [dir] } as never)),
    ).toEqual(unknownOption('allowedRoot', 'allowedRoots'))
  })
})

describe('a pre-aborted signal', () => {
  it('startRun rejects with the signal’s reason, as when it aborts mid-way, and stores nothing', async () => {
    const shell = scriptedShell({})
    const { engine, store } = await startedEngine({ shellRunner: shell })
    const controller = new AbortController()
    const reason = new Error('caller gave up')
    controller.abort(reason)
    await expect(engine.startRun(YAML, { signal: controller.signal })).rejects.toBe(reason)
    expect(await store.listRuns()).toEqual([])
    expect(shell.calls).toEqual([])
  })
})

describe('maxRenderedInputLength counts UTF-8 bytes', () => {
  const twoSteps =
    'name: big\nsteps:\n  - { id: a, run: "produce" }\n  - { id: b, run: "echo {{a.result}}", depends_on: [a] }\n'

  it('multi-byte text within the cap in characters but over it in bytes fails the step without running it', async () => {
    // 400 characters of 3 bytes each: 1200 bytes of UTF-8, far under 1000 characters.
    const shell = scriptedShell({ a: '日'.repeat(400) })
    const { engine } = await startedEngine({ shellRunner: shell, maxRenderedInputLength: 1000 })
    const { runId } = await engine.startRun(twoSteps)
    const snapshot = await engine.waitForRun(runId)
    expect(snapshot.steps[1]).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/^The rendered command is longer than 1000 bytes of UTF-8 \(12\d\d\)$/),
      input: null,
    })
    expect(shell.calls.map((call) => call.stepId)).toEqual(['a'])
  })

  it('the same number of ASCII characters is within the cap and runs', async () => {
    const shell = scriptedShell({ a: 'x'.repeat(400) })
    const { engine } = await startedEngine({ shellRunner: shell, maxRenderedInputLength: 1000 })
    const { runId } = await engine.startRun(twoSteps)
    expect((await engine.waitForRun(runId)).status).toBe('completed')
    expect(shell.calls.map((call) => call.stepId)).toEqual(['a', 'b'])
  })
})
