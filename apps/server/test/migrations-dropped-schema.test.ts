/**
 * kysely's Migrator reads the tables of every schema of a PostgreSQL database to find its own
 * (`has_schema_privilege(<name>, 'USAGE')` per row): a schema another client drops during that
 * read fails it with "schema … does not exist" (seen in a full test run, where test files drop
 * their schemas while others migrate). Each migration runner reads again instead of failing the
 * start. Here the database really raises that error: a plugin on the handle (the host's side of the
 * wire) turns the Migrator's first table read into a call naming a schema that does not exist.
 */
import { migrateCron } from '@lango/cron/sqlite'
import { migrateWorkflow } from '@lango/workflow/sqlite'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrateApprovals } from '../src/approvals/store.js'
import { type PostgresSchema, postgresSchemas } from './fixtures/postgres-schema.js'

/**
 * A handle on `schema` whose first `times` reads of every schema's tables (the Migrator's
 * introspection) are sent as a call naming a schema that does not exist, which PostgreSQL refuses
 * exactly as it does when the schema is dropped during the read. `state.remaining` counts down.
 */
function handleWithDroppedSchema(schema: string, times: number) {
  const state = { remaining: times }
  class Client extends pg.Client {
    // biome-ignore lint/suspicious/noExplicitAny: pg's query has many overloads
    override query(config: any, ...rest: any[]): any {
      const text = typeof config === 'string' ? config : config?.text
      if (state.remaining > 0 && typeof text === 'string' && text.includes('has_schema_privilege')) {
        state.remaining -= 1
        const replaced = "select has_schema_privilege('dropped_by_another_client', 'USAGE')"
        return super.query(
          typeof config === 'string' ? replaced : { ...config, text: replaced, values: [] },
          ...rest.slice(1),
        )
      }
      return super.query(config, ...rest)
    }
  }
  const pool = new pg.Pool({
    host: '127.0.0.1',
    port: 5432,
    database: 'test',
    user: process.env.PGUSER ?? 'postgres',
    max: 2,
    options: `-c search_path=${schema}`,
    Client,
  })
  return { db: new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) }), state }
}

const { open, reason } = await postgresSchemas<Record<string, never>>('migrate_race')

describe.skipIf(open === undefined)(`migrations while another client drops a schema ${reason ?? ''}`, () => {
  let schema: PostgresSchema<Record<string, never>>
  let name = ''
  beforeAll(async () => {
    schema = await (open as NonNullable<typeof open>)()
    const { rows } = await sql<{ name: string }>`select current_schema() as name`.execute(schema.db)
    name = rows[0]?.name ?? ''
  })
  afterAll(async () => {
    await schema?.close()
  })

  // Each runner takes its own database type; the handle is untyped here.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  type Migrate = (db: Kysely<any>) => Promise<void>
  it.each<[string, Migrate, string]>([
    ['the server’s (approvals)', migrateApprovals, 'approval_migrations'],
    ['@lango/cron’s', migrateCron, 'lango_cron_migration'],
    ['@lango/workflow’s', migrateWorkflow, 'lango_workflow_migration'],
  ])('%s read the tables again and migrate', async (_, migrate, table) => {
    const { db, state } = handleWithDroppedSchema(name, 1)
    try {
      await migrate(db)
    } finally {
      await db.destroy()
    }
    expect(state.remaining).toBe(0)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(
      schema.db,
    )
    expect(rows[0]?.n).toBeGreaterThan(0)
  })

  it('a schema missing on every read still fails, naming the migration', async () => {
    const { db } = handleWithDroppedSchema(name, 10)
    const error = await migrateApprovals(db).catch((caught: unknown) => caught)
    await db.destroy()
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toContain('approvals migration')
  })
})
