/**
 * Type-level check (run by `tsc --noEmit`): one Kysely typed for cron's tables and another
 * package's is accepted by the store and the migrations without a cast (ADR 0006).
 */
import type { Kysely } from 'kysely'
import type { CronStore } from '../ports.js'
import type { CronDatabase } from './schema.js'
import { migrateCron } from './schema.js'
import { SqliteCronStore } from './sqlite-cron-store.js'

/** Stands for another package's tables (for instance @lango/workflow's). */
interface OtherDatabase {
  other_runs: { id: string; status: string; created_at: number }
}

declare const shared: Kysely<CronDatabase & OtherDatabase>
declare const cronOnly: Kysely<CronDatabase>
declare const otherOnly: Kysely<OtherDatabase>

export const sharedStore: CronStore = new SqliteCronStore(shared)
export const cronStore: CronStore = new SqliteCronStore(cronOnly)
export const migrated: Promise<void> = migrateCron(shared)

// A handle without cron's tables is refused.
// @ts-expect-error other_runs only: cron_jobs, cron_runs and cron_owners are missing
export const refused = new SqliteCronStore(otherOnly)
// @ts-expect-error other_runs only
export const refusedMigration = migrateCron(otherOnly)

// The shared handle keeps its full type for the host's own queries.
export const ownQuery = shared.selectFrom('other_runs').select(['id', 'status'])
