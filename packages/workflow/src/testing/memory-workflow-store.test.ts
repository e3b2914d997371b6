import { MemoryWorkflowStore } from './memory-workflow-store.js'
import { workflowStoreContract } from './vitest/store-contract.js'

workflowStoreContract('MemoryWorkflowStore', async () => ({ store: new MemoryWorkflowStore() }))
