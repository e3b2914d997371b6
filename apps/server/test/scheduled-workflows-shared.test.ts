/**
 * Saved workflows' schedules on a database several servers share (issue 21; an outside probe): a
 * server whose workflows directory lacks a file (another home, another machine) must not remove the
 * cluster's schedule of it when it starts; a server that holds the file still can (it no longer
 * wants one). PostgreSQL at 127.0.0.1:5432, a database of this file's own.
 */
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './fixtures/http-server.js'
import { postgresDatabase } from './fixtures/postgres-database.js'

const database = postgresDatabase('lango_shared_flows')
const servers: TestServer[] = []

beforeAll(() => database.create())
afterAll(async () => {
  for (const server of servers.splice(0)) await server.dispose()
  await database.drop()
})

const NIGHTLY = 'name: nightly\nschedule: "0 3 * * *"\nsteps:\n  - id: a\n    run: echo nightly\n'

it("a server without a saved workflow's file keeps its schedule; the server that holds the file can drop it", async () => {
  const env = { LANGO_DATABASE_URL: database.url }
  const holder = await startTestServer(undefined, env)
  servers.push(holder)
  const file = join(holder.config.workflow.directory, 'nightly.flow.yaml')
  await writeFile(file, NIGHTLY)
  await holder.app.syncSchedules()
  expect((await holder.app.cron.get('workflow.nightly')).schedule).toBe('0 3 * * *')

  // Another home, an empty workflows directory: its start syncs, and must leave the job alone.
  const other = await startTestServer(undefined, env)
  servers.push(other)
  await other.app.syncSchedules()
  expect((await holder.app.cron.get('workflow.nightly')).schedule).toBe('0 3 * * *')

  // The holder's file loses its schedule: the job goes, for every server.
  await writeFile(file, NIGHTLY.replace('schedule: "0 3 * * *"\n', ''))
  await holder.app.syncSchedules()
  await expect(other.app.cron.get('workflow.nightly')).rejects.toMatchObject({ code: 'CRON_JOB_NOT_FOUND' })

  // Scheduled again, then the file is deleted where it lives: on a shared database a missing file
  // removes nothing (another server may hold it); the schedule stays until a file says otherwise.
  await writeFile(file, NIGHTLY)
  await holder.app.syncSchedules()
  await rm(file)
  await holder.app.syncSchedules()
  expect((await other.app.cron.get('workflow.nightly')).schedule).toBe('0 3 * * *')
}, 60_000)
