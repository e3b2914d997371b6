/**
 * `@lango/workflow`'s store on a real PostgreSQL (127.0.0.1:5432, database `test`): the store
 * contract on a fresh schema per test, after the package's migrations. The package has no
 * PostgreSQL driver itself, so this runs here; skipped (saying why) when the server is not
 * reachable.
 */
import { migrateWorkflow, SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import { workflowStoreContract } from '@lango/workflow/testing/vitest'
import { describe } from 'vitest'
import { postgresSchemas } from './fixtures/postgres-schema.js'

const backend = await postgresSchemas<WorkflowDatabase>('workflow_test')
const open = backend.open
describe.skipIf(open === undefined)(
  `@lango/workflow on PostgreSQL${backend.reason === undefined ? '' : ` — SKIPPED: ${backend.reason}`}`,
  () => {
    if (open === undefined) return
    workflowStoreContract('SqliteWorkflowStore on PostgreSQL', async () => {
      const schema = await open()
      await migrateWorkflow(schema.db)
      return {
        store: new SqliteWorkflowStore(schema.db),
        // A second pool on the same schema: concurrent claims come from separate connections.
        another: () => new SqliteWorkflowStore(schema.another()),
        cleanup: () => schema.close(),
      }
    })
  },
)
