import type { Kysely, Migration } from 'kysely'
import { runMigrations } from '../db/migrations.js'

/** The migration table of the cluster tables (kysely: "ALWAYS use the same value"). */
const CLUSTER_MIGRATION_TABLE = 'instance_migrations'

// biome-ignore lint/suspicious/noExplicitAny: the server's one handle, shared by every store
type HostDatabase = Kysely<any>

const clusterMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_instances': {
    async up(db: HostDatabase): Promise<void> {
      await db.schema
        .createTable('instances')
        .addColumn('id', 'text', (column) => column.primaryKey())
        .addColumn('host', 'text', (column) => column.notNull())
        .addColumn('pid', 'integer', (column) => column.notNull())
        .addColumn('version', 'text', (column) => column.notNull())
        .addColumn('started_at', 'bigint', (column) => column.notNull())
        .addColumn('heartbeat_at', 'bigint', (column) => column.notNull())
        .execute()
    },
    async down(db: HostDatabase): Promise<void> {
      await db.schema.dropTable('instances').execute()
    },
  },
  '0002_create_leases': {
    async up(db: HostDatabase): Promise<void> {
      await db.schema
        .createTable('leases')
        .addColumn('name', 'text', (column) => column.primaryKey())
        .addColumn('owner', 'text', (column) => column.notNull())
        .addColumn('version', 'bigint', (column) => column.notNull())
        .addColumn('acquired_at', 'bigint', (column) => column.notNull())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .execute()
    },
    async down(db: HostDatabase): Promise<void> {
      await db.schema.dropTable('leases').execute()
    },
  },
})

/**
 * Creates or upgrades the server's cluster tables, `instances` and `leases` (SQLite and
 * PostgreSQL); throws if a migration failed.
 */
export async function migrateCluster(db: HostDatabase): Promise<void> {
  await runMigrations(db, 'cluster tables', CLUSTER_MIGRATION_TABLE, clusterMigrations)
}
