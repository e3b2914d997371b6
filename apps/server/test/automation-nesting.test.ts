import { invokeTool } from '@lango/tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { asks, type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, until } from './fixtures/http-server.js'

// Probe finding (spend): each package capped its own chain of runs started from inside runs, and
// the count restarted at every change of kind, so a workflow step that submits a background task
// whose agent starts the workflow again looped without end, spending as it went. The server now
// counts the chain across kinds (SECURITY.md WF-7): the run its tools start is one deeper than the
// turn, and each package refuses past its maxNesting (2). The model is a fake OpenAI server on
// loopback that plays both agents.

let model: FakeOpenAI
const cleanups: (() => Promise<void>)[] = []

beforeEach(async () => {
  model = await startFakeOpenAI()
})

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await model.close()
})

describe('a chain of runs started from inside runs, across kinds (WF-7)', () => {
  it('a workflow step that submits a task that starts the workflow again stops at maxNesting', async () => {
    const server = await startTestServer((loaded) => ({
      ...loaded,
      model: { ...loaded.model, baseUrl: model.baseUrl, name: 'test-model' },
      agent: { ...loaded.agent, maxRetries: 0 },
    }))
    cleanups.push(() => server.dispose())
    const call = async (name: string, params: unknown) => {
      const tool = server.app.tools.find((candidate) => candidate.name === name)
      if (tool === undefined) throw new Error(`no tool ${name}`)
      const outcome = await invokeTool(tool, params, { sessionKey: 'cli' }, { policy: 'none' })
      if (!outcome.ok) throw new Error(`${name} failed: ${outcome.error.message}`)
      return outcome.result as Record<string, unknown>
    }
    await call('workflow_save', {
      name: 'loop',
      yaml_content:
        'name: loop\nsteps:\n  - { id: hand-off, prompt: "LOOP STEP: hand the work to a task" }\n',
    })
    // Each agent does its one thing every time it is asked, then answers: without a cross-kind
    // count the chain would go on for as long as there are replies.
    const rounds = 6
    for (let round = 0; round < rounds; round++) {
      model.scriptWhen(
        (body) => asks(body, 'LOOP STEP'),
        reply.toolCalls([
          { id: `step_${round}`, name: 'bg_submit', arguments: { prompt: 'LOOP TASK: go on' } },
        ]),
        reply.text('Handed off.'),
      )
      model.scriptWhen(
        (body) => asks(body, 'LOOP TASK'),
        reply.toolCalls([
          { id: `task_${round}`, name: 'workflow_run', arguments: { file_path: 'loop', wait_seconds: 0 } },
        ]),
        reply.text('Started the loop.'),
      )
    }
    const first = (await call('workflow_run', { file_path: 'loop', wait_seconds: 0 })).run_id as string

    // Run 0 (the operator's) → task 1 → run 2 → its step's bg_submit is refused: 3 would pass 2.
    const refusal = await until(
      async () =>
        model.chatBodies
          .flatMap((body) => body.messages)
          .map((message) => JSON.stringify(message.content))
          .find((content) => content.includes('BACKGROUND_NESTING_TOO_DEEP')),
      60_000,
    )
    expect(refusal).toContain('nest at most 2 deep')
    const runs = await until(async () => {
      const listed = await server.app.engine.listRuns({ limit: 20 })
      return listed.length === 2 && listed.every((run) => run.status !== 'running') ? listed : undefined
    }, 60_000)
    expect(runs.map((run) => run.runId)).toContain(first)
    const tasks = await until(async () => {
      const listed = server.app.background.list()
      return listed.every((task) => task.status === 'done') ? listed : undefined
    }, 60_000)
    expect(tasks.map((task) => task.nesting)).toEqual([1])
    // Nothing further was asked of the model: the refused call ended the chain.
    expect(model.chatBodies.filter((body) => asks(body, 'LOOP TASK'))).toHaveLength(2)
    expect(model.chatBodies.filter((body) => asks(body, 'LOOP STEP'))).toHaveLength(4)
  })
})
