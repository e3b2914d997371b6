import { CRON_MIGRATION_TABLE, type CronDatabase, cronMigrations, migrateCron } from '@lango/cron/sqlite'
import {
  migrateWorkflow,
  WORKFLOW_MIGRATION_TABLE,
  type WorkflowDatabase,
  workflowMigrations,
} from '@lango/workflow/sqlite'
import { type ApprovalDatabase, approvalTables } from '../approvals/store.js'
import { type ClusterDatabase, clusterTables } from '../cluster/schema.js'
import type { ServerConfig } from '../config/types.js'
import { type DatabaseFeature, type OpenDatabase, openDatabase } from '../db/database.js'
import type { Logger } from '../logger.js'
import { type SessionDatabase, sessionTables } from '../sessions/schema.js'
import { type UsageDatabase, usageTables } from '../usage/usage-ledger.js'
import { type VaultDatabase, vaultTables } from '../vault/vault.js'
import { type WebhookDatabase, webhookTables } from '../webhooks/receipts.js'

/** Every table of the server's database: each feature's own, side by side (no two share a name). */
type ServerTables = CronDatabase &
  WorkflowDatabase &
  VaultDatabase &
  SessionDatabase &
  ApprovalDatabase &
  ClusterDatabase &
  WebhookDatabase &
  UsageDatabase

/** The server's open database, typed for every feature's tables. */
export type ServerDatabase = OpenDatabase<ServerTables>

/** The packages' tables (a feature of the server's own exports its descriptor beside its migrations). */
const cronTables: DatabaseFeature<CronDatabase> = {
  name: 'cron',
  migrationTable: CRON_MIGRATION_TABLE,
  migrations: cronMigrations,
  migrate: migrateCron,
}
const workflowTables: DatabaseFeature<WorkflowDatabase> = {
  name: 'workflow',
  migrationTable: WORKFLOW_MIGRATION_TABLE,
  migrations: workflowMigrations,
  migrate: migrateWorkflow,
}

/**
 * The features that own tables, in the order their migrations run. The order and each feature's
 * migration table are fixed: existing databases have them recorded. `lango doctor` reads their
 * migration tables too.
 */
export const SERVER_DATABASE_FEATURES: readonly DatabaseFeature<ServerTables>[] = [
  cronTables,
  workflowTables,
  vaultTables,
  sessionTables,
  approvalTables,
  clusterTables,
  webhookTables,
  usageTables,
]

/** Opens the configured database with every feature's tables migrated (see `openDatabase`). */
export function openServerDatabase(config: ServerConfig, logger: Logger): Promise<ServerDatabase> {
  return openDatabase(config, logger, SERVER_DATABASE_FEATURES)
}
