import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { SqliteWorkflowStore } from '../src/sqlite/index.js'
import { createTestRun } from '../src/testing/create-test-run.js'
import { ensureBuilt } from './__fixtures__/build.js'
import { createTestDatabase } from './__fixtures__/database.js'

beforeAll(() => ensureBuilt(), 120_000)

function claimInChild(path: string, owner: string, startAt: number, limit: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, 'fixtures', 'claim-child.mjs'), path, owner, String(startAt), String(limit)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.once('error', reject)
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(output) as string[]) : reject(new Error(`claimer exited with ${code}`)),
    )
  })
}

it('processes claiming on one SQLite file at the same moment never take the same run, and leave none behind', async () => {
  const database = await createTestDatabase()
  try {
    const store = new SqliteWorkflowStore(database.db)
    const runs = Array.from({ length: 120 }, (_, index) =>
      createTestRun({ owner: 'dead', startedAt: index, leaseExpiresAt: 500 }),
    )
    for (const run of runs) await store.insertRun(run)
    await store.updateStep(
      runs[0]?.id as string,
      'a',
      { status: 'running', attempt: 1 },
      {
        lease: { owner: 'dead', version: 1 },
      },
    )
    const owners = ['p0', 'p1', 'p2', 'p3']
    const startAt = Date.now() + 1_500
    const taken = await Promise.all(owners.map((owner) => claimInChild(database.path, owner, startAt, 3)))

    const all = taken.flat()
    expect(all.length).toBe(runs.length)
    expect(new Set(all)).toEqual(new Set(runs.map((run) => run.id)))
    for (const [index, owner] of owners.entries()) {
      for (const runId of taken[index] as string[]) {
        expect(await store.getRun(runId)).toMatchObject({ owner, leaseVersion: 2, leaseExpiresAt: 9_000_000 })
      }
    }
    expect((await store.listSteps(runs[0]?.id as string))[0]?.status).toBe('pending')
  } finally {
    await database.cleanup()
  }
}, 60_000)
