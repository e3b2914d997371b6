import { MemoryCronStore } from './memory-cron-store.js'
import { cronStoreContract } from './store-contract.js'

cronStoreContract('MemoryCronStore', async () => ({ store: new MemoryCronStore() }))
