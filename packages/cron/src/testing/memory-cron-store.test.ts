import { MemoryCronStore } from './memory-cron-store.js'
import { cronStoreContract } from './vitest.js'

cronStoreContract('MemoryCronStore', async () => ({ store: new MemoryCronStore() }))
