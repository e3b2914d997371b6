import type { ColumnType, Kysely, Migration } from 'kysely'
import type { DatabaseFeature } from '../db/database.js'
import { runMigrations } from '../db/migrations.js'

/** The migration table of the cluster tables (kysely: "ALWAYS use the same value"). */
const CLUSTER_MIGRATION_TABLE = 'instance_migrations'

/** An epoch-millisecond `bigint` column: pg returns BIGINT as a string, SQLite as a number. */
type Epoch = ColumnType<number | string, number, number>

/** `instances`: one row per server on the database (./instances.ts). */
interface InstancesTable {
  id: string
  host: string
  pid: ColumnType<number | string, number, number>
  version: string
  started_at: Epoch
  heartbeat_at: Epoch
  /** Its `cluster.lease`: how long after its last heartbeat it counts as gone (null: written before 0003). */
  lease_ms: ColumnType<number | string | null, number | undefined, number>
}

/** `leases`: one row per singleton duty (./leases.ts); `version` is the fencing token. */
interface LeasesTable {
  name: string
  owner: string
  version: ColumnType<number | string, number, number>
  acquired_at: Epoch
  expires_at: Epoch
}

/** The tables of the cluster: the instance registry and the leases of singleton duties. */
export interface ClusterDatabase {
  instances: InstancesTable
  leases: LeasesTable
}

const clusterMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_instances': {
    async up(db: Kysely<unknown>): Promise<void> {
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
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('instances').execute()
    },
  },
  '0002_create_leases': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('leases')
        .addColumn('name', 'text', (column) => column.primaryKey())
        .addColumn('owner', 'text', (column) => column.notNull())
        .addColumn('version', 'bigint', (column) => column.notNull())
        .addColumn('acquired_at', 'bigint', (column) => column.notNull())
        .addColumn('expires_at', 'bigint', (column) => column.notNull())
        .execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('leases').execute()
    },
  },
  '0003_add_instance_lease': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('instances').addColumn('lease_ms', 'bigint').execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('instances').dropColumn('lease_ms').execute()
    },
  },
})

/**
 * Creates or upgrades the server's cluster tables, `instances` and `leases` (SQLite and
 * PostgreSQL); throws if a migration failed.
 */
export async function migrateCluster<DB>(db: Kysely<DB>): Promise<void> {
  await runMigrations(db, 'cluster tables', CLUSTER_MIGRATION_TABLE, clusterMigrations)
}

/** The cluster's share of the server's database (its tables and migrations). */
export const clusterTables: DatabaseFeature<ClusterDatabase> = {
  name: 'cluster',
  migrationTable: CLUSTER_MIGRATION_TABLE,
  migrations: clusterMigrations,
  migrate: migrateCluster,
}
