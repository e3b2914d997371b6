export type { CronDatabase, CronJobsTable, CronOwnersTable, CronRunsTable } from './schema.js'
export { CRON_MIGRATION_TABLE, cronMigrations, migrateCron } from './schema.js'
export { MAX_LIST_LIMIT, SqliteCronStore } from './sqlite-cron-store.js'
