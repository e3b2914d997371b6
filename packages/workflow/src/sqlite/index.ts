export type {
  WorkflowDatabase,
  WorkflowOwnersTable,
  WorkflowRunsTable,
  WorkflowStepRunsTable,
} from './schema.js'
export { migrateWorkflow, WORKFLOW_MIGRATION_TABLE, workflowMigrations } from './schema.js'
export { MAX_LIST_LIMIT, SqliteWorkflowStore } from './sqlite-workflow-store.js'
