export type { WorkflowStoreFixture } from './store-contract.js'
export { workflowStoreContract } from './store-contract.js'
