import { describe, expect, it } from 'vitest'
import type { WorkflowStore } from '../../ports.js'
import { createTestRun } from '../create-test-run.js'

/** What a contract run needs: a fresh, empty store and how to dispose of it. */
export interface WorkflowStoreFixture {
  readonly store: WorkflowStore
  /**
   * Another store on the same database, over its own connection (what a second process would
   * open), for the concurrent-claim test; default: `store` again. Disposed of by `cleanup`.
   */
  another?(): WorkflowStore | Promise<WorkflowStore>
  cleanup?(): Promise<void>
}

/**
 * The behaviour every {@link WorkflowStore} must show. Call it from each adapter's test file with a
 * factory for a fresh, empty store (unstorage `testDriver` style).
 * @example workflowStoreContract('SqliteWorkflowStore', async () => ({ store, cleanup }))
 */
export function workflowStoreContract(name: string, makeFixture: () => Promise<WorkflowStoreFixture>): void {
  async function withStore(
    test: (store: WorkflowStore, fixture: WorkflowStoreFixture) => Promise<void>,
  ): Promise<void> {
    const fixture = await makeFixture()
    try {
      await test(fixture.store, fixture)
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
          leaseVersion: 1,
          leaseExpiresAt: run.leaseExpiresAt,
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

    it("keeps the run's creator (who its spend counts against); null when it has none", () =>
      withStore(async (store) => {
        const owned = createTestRun({ creator: 'telegram:1:2' })
        const hosted = createTestRun()
        await store.insertRun(owned)
        await store.insertRun(hosted)
        expect((await store.getRun(owned.id))?.creator).toBe('telegram:1:2')
        expect((await store.getRun(hosted.id))?.creator ?? null).toBeNull()
      }))

    it('inserts a rerun: rerunOf kept, reused steps completed with their result and reusedFrom, counted', () =>
      withStore(async (store) => {
        const first = createTestRun()
        await store.insertRun(first)
        expect((await store.getRun(first.id))?.rerunOf).toBeNull()
        expect((await store.listSteps(first.id)).map((step) => step.reusedFrom)).toEqual([null, null, null])
        const rerun = createTestRun({
          rerunOf: first.id,
          reusedSteps: [
            { stepId: 'a', reusedFrom: first.id, result: 'alpha', input: 'echo alpha', completedAt: 5_000 },
            { stepId: 'c', reusedFrom: 'run-older', result: null, input: null, completedAt: 5_000 },
          ],
        })
        await store.insertRun(rerun)
        expect(await store.getRun(rerun.id)).toMatchObject({
          id: rerun.id,
          rerunOf: first.id,
          status: 'running',
          totalSteps: 3,
          completedSteps: 2,
        })
        const steps = await store.listSteps(rerun.id)
        expect(
          steps.map((step) => [
            step.stepId,
            step.status,
            step.result,
            step.input,
            step.reusedFrom,
            step.attempt,
            step.completedAt,
            step.inputTokens,
          ]),
        ).toEqual([
          ['a', 'completed', 'alpha', 'echo alpha', first.id, 0, 5_000, null],
          ['b', 'pending', null, null, null, 0, null, null],
          ['c', 'completed', null, null, 'run-older', 0, 5_000, null],
        ])
        // A reused step is completed already: completing it again changes nothing and counts nothing.
        const owner = { lease: { owner: 'owner-a', version: 1 } }
        expect(await store.updateStep(rerun.id, 'a', { status: 'completed', result: 'x' }, owner)).toBe(false)
        expect(await store.updateStep(rerun.id, 'b', { status: 'completed', result: 'beta' }, owner)).toBe(
          true,
        )
        expect((await store.getRun(rerun.id))?.completedSteps).toBe(3)
        expect((await store.listRuns()).find((run) => run.id === rerun.id)?.rerunOf).toBe(first.id)
        // A reused id that is not a step of the run stores nothing.
        const bad = createTestRun({
          reusedSteps: [{ stepId: 'zz', reusedFrom: first.id, result: null, input: null, completedAt: 1 }],
        })
        await expect(store.insertRun(bad)).rejects.toThrow()
        expect(await store.getRun(bad.id)).toBeUndefined()
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
        const owner = { lease: { owner: 'owner-a', version: 1 } }
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
        const owner = { lease: { owner: 'owner-a', version: 1 } }
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
        expect(
          await store.updateStep(
            run.id,
            'a',
            { status: 'running' },
            { lease: { owner: 'intruder', version: 1 } },
          ),
        ).toBe(false)
        expect(
          await store.updateSteps(
            run.id,
            ['b', 'c'],
            { status: 'skipped' },
            { lease: { owner: 'intruder', version: 1 } },
          ),
        ).toBe(false)
        expect((await store.listSteps(run.id)).every((step) => step.status === 'pending')).toBe(true)
        expect(
          await store.finishRun(
            run.id,
            { status: 'failed', error: 'x', completedAt: 9 },
            { lease: { owner: 'owner-a', version: 1 } },
          ),
        ).toBe(true)
        expect(
          await store.updateStep(
            run.id,
            'a',
            { status: 'running' },
            { lease: { owner: 'owner-a', version: 1 } },
          ),
        ).toBe(false)
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
            { lease: { owner: 'owner-a', version: 1 } },
          ),
        ).toBe(true)
        expect((await store.listSteps(run.id)).map((step) => step.status)).toEqual([
          'pending',
          'skipped',
          'skipped',
        ])
        expect(
          await store.updateSteps(
            run.id,
            [],
            { status: 'skipped' },
            { lease: { owner: 'owner-a', version: 1 } },
          ),
        ).toBe(true)
      }))

    it('finishes a run once, marking its unfinished steps', () =>
      withStore(async (store) => {
        const run = createTestRun()
        await store.insertRun(run)
        await store.updateStep(
          run.id,
          'a',
          { status: 'completed', result: 'ok', completedAt: 3 },
          { lease: { owner: 'owner-a', version: 1 } },
        )
        await store.updateStep(
          run.id,
          'b',
          { status: 'running', attempt: 1 },
          { lease: { owner: 'owner-a', version: 1 } },
        )
        expect(
          await store.finishRun(
            run.id,
            { status: 'cancelled', error: 'cancelled', completedAt: 10, remainingSteps: 'cancelled' },
            { lease: { owner: 'other', version: 1 } },
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

    it('lists runs a page at a time after the run a page ended with (before), ties by id', () =>
      withStore(async (store) => {
        const runs = [
          createTestRun({ id: 'page-a', startedAt: 100 }),
          createTestRun({ id: 'page-b', startedAt: 200 }),
          createTestRun({ id: 'page-c', startedAt: 200 }),
          createTestRun({ id: 'page-d', startedAt: 300 }),
        ]
        for (const run of runs) await store.insertRun(run)
        const seen: string[] = []
        let before: { startedAt: number; id: string } | undefined
        for (let page = 0; page < 5; page++) {
          const found = await store.listRuns({ limit: 2, ...(before === undefined ? {} : { before }) })
          seen.push(...found.map((run) => run.id))
          const last = found.at(-1)
          if (found.length < 2 || last === undefined) break
          before = { startedAt: last.startedAt ?? 0, id: last.id }
        }
        expect(seen).toEqual(['page-d', 'page-c', 'page-b', 'page-a'])
      }))

    it('takes over runs whose lease expired, its own included: new owner, version + 1, new expiry, running steps reset', () =>
      withStore(async (store) => {
        const expired = createTestRun({ owner: 'dead', startedAt: 100, leaseExpiresAt: 5_000 })
        const own = createTestRun({ owner: 'new', startedAt: 200, leaseExpiresAt: 6_000 })
        const held = createTestRun({ owner: 'alive', startedAt: 300, leaseExpiresAt: 50_000 })
        const ended = createTestRun({ owner: 'dead', startedAt: 400, leaseExpiresAt: 5_000 })
        for (const run of [expired, own, held, ended]) await store.insertRun(run)
        const dead = { lease: { owner: 'dead', version: 1 } }
        await store.updateStep(expired.id, 'a', { status: 'completed', result: 'kept', completedAt: 2 }, dead)
        await store.updateStep(expired.id, 'b', { status: 'running', attempt: 1 }, dead)
        await store.finishRun(ended.id, { status: 'completed', error: null, completedAt: 3 })

        const request = { now: 10_000, leaseExpiresAt: 40_000, staleBefore: 0 }
        expect(await store.claimRuns('new', request)).toEqual([
          { runId: expired.id, version: 2 },
          { runId: own.id, version: 2 },
        ])
        expect(await store.getRun(expired.id)).toMatchObject({
          owner: 'new',
          status: 'running',
          leaseVersion: 2,
          leaseExpiresAt: 40_000,
          completedSteps: 1,
        })
        expect((await store.listSteps(expired.id)).map((step) => [step.status, step.result])).toEqual([
          ['completed', 'kept'],
          ['pending', null],
          ['pending', null],
        ])
        expect(await store.getRun(held.id)).toMatchObject({
          owner: 'alive',
          leaseVersion: 1,
          leaseExpiresAt: 50_000,
        })
        expect(await store.getRun(ended.id)).toMatchObject({ owner: 'dead', leaseVersion: 1 })
        expect(await store.claimRuns('third', request)).toEqual([])
        expect(await store.updateStep(expired.id, 'b', { status: 'running' }, dead)).toBe(false)
        expect(
          await store.updateStep(
            expired.id,
            'b',
            { status: 'running' },
            { lease: { owner: 'new', version: 2 } },
          ),
        ).toBe(true)
      }))

    it('fences every owned write by owner and version: A loses the run to B, B dies, A takes it back', () =>
      withStore(async (store) => {
        const run = createTestRun({ owner: 'a', leaseExpiresAt: 10_000 })
        await store.insertRun(run)
        const first = { lease: { owner: 'a', version: 1 } }
        const second = { lease: { owner: 'b', version: 2 } }
        const third = { lease: { owner: 'a', version: 3 } }
        expect(await store.updateStep(run.id, 'a', { status: 'running', attempt: 1 }, first)).toBe(true)
        expect(await store.claimRuns('b', { now: 10_001, leaseExpiresAt: 20_000, staleBefore: 0 })).toEqual([
          { runId: run.id, version: 2 },
        ])
        expect(await store.claimRuns('a', { now: 20_001, leaseExpiresAt: 30_000, staleBefore: 0 })).toEqual([
          { runId: run.id, version: 3 },
        ])
        // A's writes from its first ownership, B's from its own: all refused, though A owns the run again.
        for (const stale of [first, second]) {
          expect(await store.updateStep(run.id, 'a', { status: 'completed', result: 'stale' }, stale)).toBe(
            false,
          )
          expect(await store.updateSteps(run.id, ['b', 'c'], { status: 'skipped' }, stale)).toBe(false)
          expect(
            await store.finishRun(run.id, { status: 'failed', error: 'stale', completedAt: 1 }, stale),
          ).toBe(false)
          expect(
            await store.renewLeases(
              stale.lease.owner,
              [{ runId: run.id, version: stale.lease.version }],
              99_000,
            ),
          ).toEqual([])
        }
        expect(await store.listSteps(run.id)).toMatchObject([
          { stepId: 'a', status: 'pending', result: null },
          { stepId: 'b', status: 'pending' },
          { stepId: 'c', status: 'pending' },
        ])
        expect(await store.getRun(run.id)).toMatchObject({
          status: 'running',
          owner: 'a',
          leaseVersion: 3,
          leaseExpiresAt: 30_000,
          completedSteps: 0,
        })
        expect(await store.updateStep(run.id, 'a', { status: 'completed', result: 'fresh' }, third)).toBe(
          true,
        )
        expect(
          await store.finishRun(run.id, { status: 'completed', error: null, completedAt: 2 }, third),
        ).toBe(true)
      }))

    it('claims the oldest expired runs first, at most `limit`', () =>
      withStore(async (store) => {
        const runs = [300, 100, 200].map((startedAt) => createTestRun({ startedAt, leaseExpiresAt: 1_000 }))
        for (const run of runs) await store.insertRun(run)
        const request = { now: 5_000, leaseExpiresAt: 9_000, staleBefore: 0 }
        expect(await store.claimRuns('x', { ...request, limit: 0 })).toEqual([])
        expect(await store.claimRuns('x', { ...request, limit: 2 })).toEqual([
          { runId: runs[1]?.id, version: 2 },
          { runId: runs[2]?.id, version: 2 },
        ])
        expect(await store.claimRuns('y', { ...request, limit: 2 })).toEqual([
          { runId: runs[0]?.id, version: 2 },
        ])
      }))

    it('renews, in one call, the leases the owner still holds at their version', () =>
      withStore(async (store) => {
        const kept = createTestRun({ owner: 'a', leaseExpiresAt: 10_000 })
        const taken = createTestRun({ owner: 'a', leaseExpiresAt: 5_000 })
        const ended = createTestRun({ owner: 'a', leaseExpiresAt: 10_000 })
        const foreign = createTestRun({ owner: 'c', leaseExpiresAt: 10_000 })
        for (const run of [kept, taken, ended, foreign]) await store.insertRun(run)
        await store.claimRuns('b', { now: 6_000, leaseExpiresAt: 16_000, staleBefore: 0 })
        await store.finishRun(ended.id, { status: 'cancelled', error: 'cancelled', completedAt: 7 })
        const held = [kept, taken, ended, foreign].map((run) => ({ runId: run.id, version: 1 }))
        const renewed = await store.renewLeases('a', [...held, { runId: 'missing', version: 1 }], 20_000)
        expect(renewed).toEqual([kept.id])
        expect((await store.getRun(kept.id))?.leaseExpiresAt).toBe(20_000)
        expect(await store.getRun(taken.id)).toMatchObject({
          owner: 'b',
          leaseVersion: 2,
          leaseExpiresAt: 16_000,
        })
        expect((await store.getRun(foreign.id))?.leaseExpiresAt).toBe(10_000)
        expect(await store.renewLeases('a', [{ runId: kept.id, version: 2 }], 30_000)).toEqual([])
        expect(await store.renewLeases('a', [], 30_000)).toEqual([])
        // Renewed: not claimable until its new expiry, while the others' leases ran out.
        const later = await store.claimRuns('b', { now: 19_000, leaseExpiresAt: 40_000, staleBefore: 0 })
        expect(later.map((run) => run.runId).sort()).toEqual([taken.id, foreign.id].sort())
      }))

    it('lets a released owner’s runs be taken over at once', () =>
      withStore(async (store) => {
        await store.heartbeat('graceful', 10_000)
        const run = createTestRun({ owner: 'graceful', leaseExpiresAt: 50_000 })
        const ended = createTestRun({ owner: 'graceful', leaseExpiresAt: 50_000 })
        await store.insertRun(run)
        await store.insertRun(ended)
        await store.finishRun(ended.id, { status: 'completed', error: null, completedAt: 11_000 })
        const request = { now: 12_000, leaseExpiresAt: 42_000, staleBefore: 9_000 }
        expect(await store.claimRuns('next', request)).toEqual([])
        await store.releaseOwner('graceful')
        expect(await store.claimRuns('next', request)).toEqual([{ runId: run.id, version: 2 }])
        expect(await store.getRun(ended.id)).toMatchObject({ status: 'completed', owner: 'graceful' })
      }))

    it('never gives one run to two stores claiming at once', () =>
      withStore(async (store, fixture) => {
        const other = (await fixture.another?.()) ?? store
        const runs = Array.from({ length: 24 }, (_, index) =>
          createTestRun({ owner: 'dead', startedAt: index, leaseExpiresAt: 1_000 }),
        )
        for (const run of runs) await store.insertRun(run)
        const request = { now: 2_000, leaseExpiresAt: 60_000, staleBefore: 0, limit: 5 }
        const taken = new Map<string, string[]>([
          ['x', []],
          ['y', []],
          ['z', []],
        ])
        for (;;) {
          const round = await Promise.all([
            store.claimRuns('x', request),
            other.claimRuns('y', request),
            other.claimRuns('z', { ...request, limit: 3 }),
          ])
          if (round.every((claimed) => claimed.length === 0)) break
          for (const [index, claimed] of round.entries()) {
            taken.get(['x', 'y', 'z'][index] as string)?.push(...claimed.map((run) => run.runId))
          }
        }
        const all = [...taken.values()].flat()
        expect(all.length).toBe(runs.length)
        expect(new Set(all)).toEqual(new Set(runs.map((run) => run.id)))
        for (const [owner, ids] of taken) {
          for (const id of ids) expect(await store.getRun(id)).toMatchObject({ owner, leaseVersion: 2 })
        }
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
