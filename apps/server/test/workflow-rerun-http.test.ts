import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

let server: TestServer
let work: string
beforeAll(async () => {
  server = await startTestServer()
  work = await mkdtemp(join(tmpdir(), 'lango-rerun-http-'))
})
afterAll(async () => {
  await server?.dispose()
  if (work !== undefined) await rm(work, { recursive: true, force: true })
})

/** a → b → c, a → d; each step appends to its own file; c fails until `c.ok` exists. */
const flow = (name: string) =>
  [
    `name: ${name}`,
    'steps:',
    `  - { id: a, run: "echo ran >> ${work}/${name}-a.log && echo alpha" }`,
    `  - { id: b, run: "echo ran >> ${work}/${name}-b.log && echo beta-{{a.result}}", depends_on: [a] }`,
    `  - { id: c, run: "echo ran >> ${work}/${name}-c.log && test -f ${work}/${name}-c.ok && echo gamma-{{b.result}}", depends_on: [b] }`,
    `  - { id: d, run: "echo ran >> ${work}/${name}-d.log && echo delta", depends_on: [a] }`,
  ].join('\n')

async function ran(name: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const step of ['a', 'b', 'c', 'd']) {
    const text = await readFile(join(work, `${name}-${step}.log`), 'utf8').catch(() => '')
    counts[step] = text.split('\n').filter((line) => line === 'ran').length
  }
  return counts
}

async function failedRun(name: string): Promise<string> {
  const started = await server.request('/api/workflows/runs', {
    json: { yaml_content: flow(name), wait_seconds: 30 },
  })
  expect(started.status).toBe(200)
  const run = (await started.json()) as Json
  expect(run.status).toBe('failed')
  return run.run_id as string
}

describe('POST /api/workflows/runs/:id/rerun (issue 25)', () => {
  it('reruns from the failed step by default: a new run, the others reused, c run again (files prove it)', async () => {
    const original = await failedRun('http-default')
    await writeFile(join(work, 'http-default-c.ok'), '')
    const response = await server.request(`/api/workflows/runs/${original}/rerun`, {
      json: { wait_seconds: 30 },
    })
    expect(response.status).toBe(200)
    const rerun = (await response.json()) as Json
    expect(rerun).toMatchObject({
      rerun_of: original,
      status: 'completed',
      from_steps: ['c'],
      rerun_steps: ['c'],
      reused_steps: ['a', 'b', 'd'],
    })
    expect(rerun.run_id).not.toBe(original)
    expect(await ran('http-default')).toEqual({ a: 1, b: 1, c: 2, d: 1 })

    const status = (await (await server.request(`/api/workflows/runs/${rerun.run_id}`)).json()) as Json
    expect(status.rerun_of).toBe(original)
    expect(
      status.steps.map((step: Json) => [
        step.step_id,
        step.status,
        step.reused_from,
        step.result,
        step.depends_on,
      ]),
    ).toEqual([
      ['a', 'completed', original, 'alpha', []],
      ['b', 'completed', original, 'beta-alpha', ['a']],
      ['c', 'completed', null, 'gamma-beta-alpha', ['b']],
      ['d', 'completed', original, 'delta', ['a']],
    ])
  })

  it('with { from_step: "b" } reruns b and c, not a or d; with no body at all it takes the default', async () => {
    const original = await failedRun('http-from')
    await writeFile(join(work, 'http-from-c.ok'), '')
    const response = await server.request(`/api/workflows/runs/${original}/rerun`, {
      json: { from_step: 'b', wait_seconds: 30 },
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({
      status: 'completed',
      rerun_steps: ['b', 'c'],
      reused_steps: ['a', 'd'],
    })
    expect(await ran('http-from')).toEqual({ a: 1, b: 2, c: 2, d: 1 })

    const bare = await server.request(`/api/workflows/runs/${original}/rerun`, { method: 'POST' })
    expect(bare.status).toBe(200)
    const started = (await bare.json()) as Json
    expect(started.rerun_steps).toEqual(['c'])
    await until(async () => {
      const run = (await (await server.request(`/api/workflows/runs/${started.run_id}`)).json()) as Json
      return run.status === 'completed' ? run : undefined
    })
    expect(await ran('http-from')).toEqual({ a: 1, b: 2, c: 3, d: 1 })
  })

  it('answers typed errors: 404 for an unknown step or run, 422 WORKFLOW_RUN_ACTIVE for a running run, 400 for a bad body', async () => {
    const original = await failedRun('http-errors')
    const unknownStep = await server.request(`/api/workflows/runs/${original}/rerun`, {
      json: { from_step: 'zz' },
    })
    expect(unknownStep.status).toBe(404)
    expect(((await unknownStep.json()) as Json).error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: 'WORKFLOW_STEP_NOT_FOUND',
      data: { runId: original, stepId: 'zz', steps: ['a', 'b', 'c', 'd'] },
    })
    const unknownRun = await server.request('/api/workflows/runs/no-such-run/rerun', { json: {} })
    expect(unknownRun.status).toBe(404)
    expect(((await unknownRun.json()) as Json).error.reason).toBe('WORKFLOW_RUN_NOT_FOUND')
    const badBody = await server.request(`/api/workflows/runs/${original}/rerun`, { json: { from_step: 7 } })
    expect(badBody.status).toBe(400)
    expect(((await badBody.json()) as Json).error.code).toBe('TOOL_INVALID_PARAMETERS')

    const slow = (await (
      await server.request('/api/workflows/runs', {
        json: {
          yaml_content: 'name: http-slow\nsteps:\n  - { id: nap, run: "sleep 30" }\n',
          wait_seconds: 0,
        },
      })
    ).json()) as Json
    const active = await server.request(`/api/workflows/runs/${slow.run_id}/rerun`, { json: {} })
    expect(active.status).toBe(422)
    expect(((await active.json()) as Json).error).toMatchObject({
      code: 'TOOL_FAILED',
      reason: 'WORKFLOW_RUN_ACTIVE',
      data: { status: 'running' },
    })
    await server.request(`/api/workflows/runs/${slow.run_id}/cancel`, { method: 'POST' })
    // Nothing ran for the refused reruns.
    expect(await ran('http-errors')).toEqual({ a: 1, b: 1, c: 1, d: 1 })
  })
})
