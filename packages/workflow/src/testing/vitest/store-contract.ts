import { describe, expect, it } from 'vitest'
import type { WorkflowStore } from '../../ports.js'
import { createTestRun } from '../create-test-run.js'

/** What a contract run needs: a fresh, empty store and how to dispose of it. */
export interface WorkflowStoreFixture {
  readonly store: WorkflowStore
  cleanup?(): Promise<void>
}

/**
 * The behaviour every {@link WorkflowStore} must show. Call it from each adapter's test file with a
 * factory for a fresh, empty store (unstorage `testDriver` style).
 * @example workflowStoreContract('SqliteWorkflowStore', async () => ({ store, cleanup }))
 */
export function workflowStoreContract(name: string, makeFixture: () => Promise<WorkflowStoreFixture>): void {
  async function withStore(test: (store: WorkflowStore) => Promise<void>): Promise<void> {
    const fixture = await makeFixture()
    try {
      await test(fixture.store)
    } finally {
      await fixture.cleanup?.()
    }
  }

  describe(`${name} (WorkflowStore contract)`, () => {
    it('keeps the run with its definition and one pending row per step, in order', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        const stored = await store.getRun(run.id)
        expect(stored).toMatchObject({
          id: run.id,
          workflowName: 'contract',
          definition: run.definition,
          status: 'running',
          totalSteps: 3,
          completedSteps: 0,
          error: null,
          deliverTo: ['telegram:1'],
          originSession: 'telegram:1:2',
          owner: 'owner-a',
          startedAt: run.startedAt,
          completedAt: null,
        })
        const steps = await store.listSteps(run.id)
        expect(steps.map((step) => [step.stepId, step.position, step.status, step.attempt])).toEqual([
          ['a', 0, 'pending', 0],
          ['b', 1, 'pending', 0],
          ['c', 2, 'pending', 0],
        ])
        expect(await store.getRun('missing')).toBeUndefined()
        expect(await store.listSteps('missing')).toEqual([])
      }))

    it('rejects a second run with the same id and duplicate step ids (run_id, step_id unique)', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        await expect(store.insertRun(run)).rejects.toThrow()
        await expect(store.insertRun(createTestRun({ stepIds: ['x', 'x'] }))).rejects.toThrow()
        expect((await store.listSteps(run.id)).length).toBe(3)
      }))

    it('updates a step for its owner and counts completed steps once', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        const owner = { owner: 'owner-a' }
        expect(
          await store.updateStep(
            run.id,
            'a',
            { status: 'running', attempt: 1, input: 'echo 1', startedAt: 5 },
            owner,
          ),
        ).toBe(true)
        expect(
          await store.updateStep(run.id, 'a', { status: 'completed', result: '1', completedAt: 6 }, owner),
        ).toBe(true)
        expect(
          await store.updateStep(
            run.id,
            'a',
            { status: 'completed', result: 'again', completedAt: 7 },
            owner,
          ),
        ).toBe(false)
        const [step] = await store.listSteps(run.id)
        expect(step).toMatchObject({
          status: 'completed',
          attempt: 1,
          input: 'echo 1',
          result: '1',
          startedAt: 5,
          completedAt: 6,
          error: null,
        })
        expect((await store.getRun(run.id))?.completedSteps).toBe(1)
      }))

    it('keeps the token counts a step completes with; null until then and where none were given', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        const owner = { owner: 'owner-a' }
        expect((await store.listSteps(run.id)).map((step) => [step.inputTokens, step.outputTokens])).toEqual([
          [null, null],
          [null, null],
          [null, null],
        ])
        await store.updateStep(run.id, 'a', { status: 'running', attempt: 1, input: 'ask' }, owner)
        // Past 2^31: the columns are 64-bit (PostgreSQL's int8 comes back as a string and is decoded).
        expect(
          await store.updateStep(
            run.id,
            'a',
            {
              status: 'completed',
              result: 'answer',
              completedAt: 6,
              inputTokens: 3_000_000_000,
              outputTokens: 5,
            },
            owner,
          ),
        ).toBe(true)
        await store.updateStep(
          run.id,
          'b',
          { status: 'completed', result: 'partial count', inputTokens: null, outputTokens: 7 },
          owner,
        )
        await store.updateStep(run.id, 'c', { status: 'completed', result: 'shell' }, owner)
        const steps = await store.listSteps(run.id)
        expect(steps.map((step) => [step.stepId, step.inputTokens, step.outputTokens])).toEqual([
          ['a', 3_000_000_000, 5],
          ['b', null, 7],
          ['c', null, null],
        ])
      }))

    it('refuses step changes from an engine that does not own the run, or after it ended', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        expect(await store.updateStep(run.id, 'a', { status: 'running' }, { owner: 'intruder' })).toBe(false)
        expect(
          await store.updateSteps(run.id, ['b', 'c'], { status: 'skipped' }, { owner: 'intruder' }),
        ).toBe(false)
        expect((await store.listSteps(run.id)).every((step) => step.status === 'pending')).toBe(true)
        expect(
          await store.finishRun(
            run.id,
            { status: 'failed', error: 'x', completedAt: 9 },
            { owner: 'owner-a' },
          ),
        ).toBe(true)
        expect(await store.updateStep(run.id, 'a', { status: 'running' }, { owner: 'owner-a' })).toBe(false)
      }))

    it('changes several steps in one call', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        expect(
          await store.updateSteps(
            run.id,
            ['b', 'c'],
            { status: 'skipped', error: 'dependency failed', completedAt: 8 },
            { owner: 'owner-a' },
          ),
        ).toBe(true)
        expect((await store.listSteps(run.id)).map((step) => step.status)).toEqual([
          'pending',
          'skipped',
          'skipped',
        ])
        expect(await store.updateSteps(run.id, [], { status: 'skipped' }, { owner: 'owner-a' })).toBe(true)
      }))

    it('finishes a run once, marking its unfinished steps', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        await store.updateStep(
          run.id,
          'a',
          { status: 'completed', result: 'ok', completedAt: 3 },
          { owner: 'owner-a' },
        )
        await store.updateStep(run.id, 'b', { status: 'running', attempt: 1 }, { owner: 'owner-a' })
        expect(
          await store.finishRun(
            run.id,
            { status: 'cancelled', error: 'cancelled', completedAt: 10, remainingSteps: 'cancelled' },
            { owner: 'other' },
          ),
        ).toBe(false)
        expect(
          await store.finishRun(run.id, {
            status: 'cancelled',
            error: 'cancelled',
            completedAt: 10,
            remainingSteps: 'cancelled',
          }),
        ).toBe(true)
        expect(await store.finishRun(run.id, { status: 'completed', error: null, completedAt: 11 })).toBe(
          false,
        )
        expect(await store.getRun(run.id)).toMatchObject({
          status: 'cancelled',
          error: 'cancelled',
          completedAt: 10,
          completedSteps: 1,
        })
        expect((await store.listSteps(run.id)).map((step) => step.status)).toEqual([
          'completed',
          'cancelled',
          'cancelled',
        ])
      }))

    it('lists runs newest first, filtered by status and name, with a capped limit', () =>
      withStore(async (store) => {
        const runs = [
          createTestRun({ startedAt: 100 }),
          createTestRun({ startedAt: 300, workflowName: 'other' }),
          createTestRun({ startedAt: 200 }),
        ]
        for (const run of runs) await store.insertRun(run)
        await store.finishRun(runs[0]?.id as string, { status: 'completed', error: null, completedAt: 150 })
        expect((await store.listRuns()).map((run) => run.startedAt)).toEqual([300, 200, 100])
        expect((await store.listRuns({ status: 'completed' })).map((run) => run.startedAt)).toEqual([100])
        expect((await store.listRuns({ workflowName: 'other' })).map((run) => run.startedAt)).toEqual([300])
        expect((await store.listRuns({ limit: 2 })).length).toBe(2)
        expect((await store.listRuns({ limit: 0 })).length).toBe(1)
      }))

    it('takes over runs whose owner stopped heartbeating, resetting running steps to pending', () =>
      withStore(async (store) => {
        await store.heartbeat('dead', 1_000)
        await store.heartbeat('alive', 5_000)
        const orphan = createTestRun({ owner: 'dead' })
        const held = createTestRun({ owner: 'alive' })
        const ownerless = createTestRun({ owner: 'never-registered' })
        const ended = createTestRun({ owner: 'dead' })
        for (const run of [orphan, held, ownerless, ended]) await store.insertRun(run)
        await store.updateStep(
          orphan.id,
          'a',
          { status: 'completed', result: 'kept', completedAt: 2 },
          { owner: 'dead' },
        )
        await store.updateStep(orphan.id, 'b', { status: 'running', attempt: 1 }, { owner: 'dead' })
        await store.finishRun(ended.id, { status: 'completed', error: null, completedAt: 3 })

        await store.heartbeat('new', 4_000)
        const claimed = await store.claimRuns('new', 4_000)
        expect(claimed.sort()).toEqual([orphan.id, ownerless.id].sort())
        expect(await store.getRun(orphan.id)).toMatchObject({
          owner: 'new',
          status: 'running',
          completedSteps: 1,
        })
        expect((await store.listSteps(orphan.id)).map((step) => [step.status, step.result])).toEqual([
          ['completed', 'kept'],
          ['pending', null],
          ['pending', null],
        ])
        expect((await store.getRun(held.id))?.owner).toBe('alive')
        expect(await store.claimRuns('third', 4_000)).toEqual([])
        expect(await store.updateStep(orphan.id, 'b', { status: 'running' }, { owner: 'dead' })).toBe(false)
      }))

    it('lets a released owner’s runs be taken over at once', () =>
      withStore(async (store) => {
        await store.heartbeat('graceful', 10_000)
        const run = createTestRun({ owner: 'graceful' })
        await store.insertRun(run)
        expect(await store.claimRuns('next', 9_000)).toEqual([])
        await store.releaseOwner('graceful')
        expect(await store.claimRuns('next', 9_000)).toEqual([run.id])
      }))

    it('prunes ended runs by age and by count, never active ones', () =>
      withStore(async (store) => {
        const runs = Array.from({ length: 5 }, (_, index) => createTestRun({ startedAt: index * 10 }))
        for (const run of runs) await store.insertRun(run)
        for (const [index, run] of runs.slice(0, 4).entries()) {
          await store.finishRun(run.id, { status: 'completed', error: null, completedAt: 100 + index })
        }
        expect(await store.pruneRuns({ completedBefore: 101, keep: 1000 })).toBe(1)
        expect(await store.pruneRuns({ completedBefore: 0, keep: 2 })).toBe(1)
        const left = (await store.listRuns({ limit: 10 })).map((run) => run.id)
        expect(left.sort()).toEqual([runs[2]?.id, runs[3]?.id, runs[4]?.id].sort())
        expect(await store.listSteps(runs[0]?.id as string)).toEqual([])
      }))
  })
}
