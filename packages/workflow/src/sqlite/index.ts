export type { WorkflowDatabase } from './schema.js'
export { migrateWorkflow, WORKFLOW_MIGRATION_TABLE, workflowMigrations } from './schema.js'
export { SqliteWorkflowStore } from './sqlite-workflow-store.js'
