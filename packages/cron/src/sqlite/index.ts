export type {
  CronDatabase,
  CronDeliveriesTable,
  CronJobsTable,
  CronOwnersTable,
  CronRunsTable,
} from './schema.js'
export { CRON_MIGRATION_TABLE, cronMigrations, migrateCron } from './schema.js'
export { SqliteCronStore } from './sqlite-cron-store.js'
