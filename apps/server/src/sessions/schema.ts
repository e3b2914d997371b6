import type { Kysely, Migration } from 'kysely'
import type { DatabaseFeature } from '../db/database.js'
import { runMigrations } from '../db/migrations.js'

/**
 * `sessions`: one row per live session key. Times are epoch milliseconds (`bigint`; PostgreSQL
 * returns strings, which the store parses).
 */
interface SessionsTable {
  key: string
  /** Incarnation id: a deleted and re-created key gets a new one, so stale work cannot land on it. */
  id: string
  created_at: number
  /** Last append; retention expires sessions by it. */
  updated_at: number
  /** Highest sequence number handed out; messages get `last_seq + 1 …`. Never decreases. */
  last_seq: number
  /** Every message at or below this sequence is covered by an observation (and skipped by `load`). */
  observed_through: number
  /** Instance holding the compaction lease, if any. */
  lease_owner: string | null
  lease_until: number | null
}

/** `session_messages`: the ordered log, primary key `(session_key, seq)`. */
interface SessionMessagesTable {
  session_key: string
  seq: number
  role: string
  /** The model message as JSON, validated on read. */
  content: string
  /** UTF-8 size of `content`; bounds and token estimates use it. */
  bytes: number
  created_at: number
}

/**
 * `session_observations`: observations and reflections of a session, primary key
 * `(session_key, through_seq)`, in `through_seq` order.
 */
interface SessionObservationsTable {
  session_key: string
  /** First message sequence this entry covers. */
  from_seq: number
  /** Last message sequence this entry covers. */
  through_seq: number
  /** 0 for an observation; n > 0 for a reflection condensing entries of generation < n. */
  generation: number
  text: string
  /** Estimated tokens of `text`. */
  tokens: number
  created_at: number
}

/** The tables the session store owns. Hosts need not declare them: the store narrows any handle. */
export interface SessionDatabase {
  sessions: SessionsTable
  session_messages: SessionMessagesTable
  session_observations: SessionObservationsTable
}

/** The migration table the session store always uses (kysely: "ALWAYS use the same value"). */
export const SESSION_MIGRATION_TABLE = 'session_migrations'

/** Migrations of the session store, runnable on SQLite and PostgreSQL (plain kysely schema builder). */
export const sessionMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_session_tables': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('sessions')
        .addColumn('key', 'text', (column) => column.primaryKey())
        .addColumn('id', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('updated_at', 'bigint', (column) => column.notNull())
        .addColumn('last_seq', 'bigint', (column) => column.notNull().defaultTo(0))
        .addColumn('observed_through', 'bigint', (column) => column.notNull().defaultTo(0))
        .addColumn('lease_owner', 'text')
        .addColumn('lease_until', 'bigint')
        .execute()
      // Retention and least-recently-used eviction scan by last activity.
      await db.schema.createIndex('sessions_updated_at').on('sessions').column('updated_at').execute()
      await db.schema
        .createTable('session_messages')
        .addColumn('session_key', 'text', (column) => column.notNull())
        .addColumn('seq', 'bigint', (column) => column.notNull())
        .addColumn('role', 'text', (column) => column.notNull())
        .addColumn('content', 'text', (column) => column.notNull())
        .addColumn('bytes', 'integer', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('session_messages_pk', ['session_key', 'seq'])
        .execute()
      await db.schema
        .createTable('session_observations')
        .addColumn('session_key', 'text', (column) => column.notNull())
        .addColumn('from_seq', 'bigint', (column) => column.notNull())
        .addColumn('through_seq', 'bigint', (column) => column.notNull())
        .addColumn('generation', 'integer', (column) => column.notNull())
        .addColumn('text', 'text', (column) => column.notNull())
        .addColumn('tokens', 'integer', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('session_observations_pk', ['session_key', 'through_seq'])
        .execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('session_observations').execute()
      await db.schema.dropTable('session_messages').execute()
      await db.schema.dropTable('sessions').execute()
    },
  },
})

/**
 * Creates or upgrades the session tables with kysely's Migrator and the fixed migration table
 * `session_migrations`; throws if a migration failed. Takes the host's handle as it is.
 * @example await migrateSessions(db)
 */
export async function migrateSessions<DB>(db: Kysely<DB>): Promise<void> {
  await runMigrations(db, 'session', SESSION_MIGRATION_TABLE, sessionMigrations)
}

/** The session store's share of the server's database (its tables and migrations). */
export const sessionTables: DatabaseFeature<SessionDatabase> = {
  name: 'sessions',
  migrationTable: SESSION_MIGRATION_TABLE,
  migrations: sessionMigrations,
  migrate: migrateSessions,
}
