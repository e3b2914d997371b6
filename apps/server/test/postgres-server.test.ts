// The whole server on PostgreSQL (issue 14's first part): `LANGO_DATABASE_URL=postgres://…` runs
// every package's migrations and stores on a fresh database, created for this file and dropped
// after it. PostgreSQL at 127.0.0.1:5432 (trust auth), as CI provides it.
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'
import { startTestServer, type TestServer, until } from './fixtures/http-server.js'

const ADMIN = { host: '127.0.0.1', port: 5432, database: 'test', user: process.env.PGUSER ?? 'postgres' }
const DATABASE = `lango_server_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
const URL_OF_DATABASE = `postgres://${ADMIN.user}@${ADMIN.host}:${ADMIN.port}/${DATABASE}`

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client(ADMIN)
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** A client of the test's own database. */
async function inDatabase<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ ...ADMIN, database: DATABASE })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

let model: FakeOpenAI
let server: TestServer | undefined

beforeAll(async () => {
  await admin((client) => client.query(`create database ${DATABASE}`))
  model = await startFakeOpenAI()
})
afterAll(async () => {
  await server?.dispose()
  await model?.close()
  await admin((client) => client.query(`drop database if exists ${DATABASE} with (force)`))
})

function start(): Promise<TestServer> {
  return startTestServer((config) => ({ ...config, agent: { ...config.agent, maxRetries: 0 } }), {
    LANGO_DATABASE_URL: URL_OF_DATABASE,
    LANGO_MODEL_BASE_URL: model.baseUrl,
    LANGO_MODEL: 'test-model',
  })
}

describe('lango serve on PostgreSQL', () => {
  it('migrates a fresh database and reports it healthy, naming it without credentials', async () => {
    server = await start()
    const health = (await (await server.request('/healthz')).json()) as Json
    expect(health).toMatchObject({ status: 'ok', database: 'ok' })
    expect(server.app.database.path).toBe(`postgres://${ADMIN.host}:${ADMIN.port}/${DATABASE}`)
    const tables = await inDatabase(async (client) =>
      (
        await client.query<{ tablename: string }>(
          "select tablename from pg_tables where schemaname = 'public'",
        )
      ).rows.map((row) => row.tablename),
    )
    expect(tables).toEqual(
      expect.arrayContaining([
        'cron_jobs',
        'cron_runs',
        'workflow_runs',
        'vault_secrets',
        'sessions',
        'approvals',
      ]),
    )
  })

  it('runs a shell cron job, a workflow and an agent chat, all stored in PostgreSQL', async () => {
    const active = server as TestServer
    const created = (await (
      await active.request('/api/cron/jobs', {
        json: {
          kind: 'shell',
          name: 'pg-shell',
          schedule_type: 'cron',
          schedule: '0 3 * * *',
          command: 'echo from-postgres',
        },
      })
    ).json()) as Json
    expect(created.job ?? created).toMatchObject({ name: 'pg-shell' })
    const triggered = (await (
      await active.request('/api/cron/jobs/pg-shell/trigger', { method: 'POST' })
    ).json()) as Json
    const run = await until(async () => {
      const { entries } = (await (await active.request('/api/cron/runs?job=pg-shell&limit=5')).json()) as Json
      return entries.find((entry: Json) => entry.id === triggered.run_id && entry.status === 'completed')
    })
    expect(run.result).toContain('from-postgres')

    const yaml = [
      'name: pg-flow',
      'steps:',
      '  - id: a',
      '    run: "echo one"',
      '  - id: b',
      '    depends_on: [a]',
      '    run: "printf \'%s-two\' {{a.result}}"',
    ].join('\n')
    const started = (await (
      await active.request('/api/workflows/runs', { json: { yaml_content: yaml } })
    ).json()) as Json
    const runId = started.run_id ?? started.id
    const finished = await until(async () => {
      const status = (await (await active.request(`/api/workflows/runs/${runId}`)).json()) as Json
      return status.status === 'completed' ? status : undefined
    }, 10_000)
    expect(JSON.stringify(finished)).toContain('one-two')

    model.script(reply.text('Hello from a PostgreSQL-backed session.'))
    const chat = (await (
      await active.request('/api/chat', { json: { session: 'pg', message: 'hi' } })
    ).json()) as Json
    expect(chat.reply).toBe('Hello from a PostgreSQL-backed session.')
    // The chat's turn is in the session log of that database (user message and reply).
    const { rows } = await inDatabase((client) =>
      client.query<{ n: number }>('select count(*)::int as n from session_messages'),
    )
    expect(rows[0]?.n).toBeGreaterThanOrEqual(2)
  })

  it('a second server on the same database sees what the first stored', async () => {
    await server?.dispose()
    server = await start()
    const job = (await (await server.request('/api/cron/jobs/pg-shell')).json()) as Json
    expect(job.job).toMatchObject({ name: 'pg-shell', schedule: '0 3 * * *' })
    const { entries } = (await (await server.request('/api/cron/runs?job=pg-shell&limit=5')).json()) as Json
    expect(entries.some((entry: Json) => entry.status === 'completed')).toBe(true)
  })

  it('two servers on one database see each other in /api/instances; a stopped one leaves', async () => {
    const first = server as TestServer
    const second = await start()
    try {
      const health = (await (await second.request('/healthz')).json()) as Json
      expect(health.instance).toBe(second.app.instances.id)
      const { instances } = (await (await first.request('/api/instances')).json()) as Json
      expect(instances).toHaveLength(2)
      expect(instances[0]).toMatchObject({
        id: first.app.instances.id,
        self: true,
        alive: true,
        pid: process.pid,
      })
      expect(instances[1]).toMatchObject({ id: second.app.instances.id, self: false, alive: true })
    } finally {
      await second.dispose()
    }
    const { instances } = (await (await first.request('/api/instances')).json()) as Json
    expect(instances.map((instance: Json) => instance.id)).toEqual([first.app.instances.id])
  })
})
