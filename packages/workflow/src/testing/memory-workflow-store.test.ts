import { MemoryWorkflowStore } from './memory-workflow-store.js'
import { workflowStoreContract } from './store-contract.js'

workflowStoreContract('MemoryWorkflowStore', async () => ({ store: new MemoryWorkflowStore() }))
