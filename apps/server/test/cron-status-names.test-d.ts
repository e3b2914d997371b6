/**
 * Type-level proof that `@lango/tools`' list of cron run statuses (the `status` filter of
 * `cron_history`, the `last_status` of `cron_list`) is exactly `@lango/cron`'s `CronRunStatus`,
 * checked by `tsc --noEmit`: the tools package declares its own narrow view and imports nothing of
 * cron's, so a status added to cron and not to the tools (or the other way) fails here.
 */
import type { CronRunStatus } from '@lango/cron'
import type { CronRunStatusName } from '@lango/tools'

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
declare function expectTrue<T extends true>(): T
declare function expectFalse<T extends false>(): T

expectTrue<Same<CronRunStatusName, CronRunStatus>>()
// The check does reject a list that lacks one of cron's statuses.
expectFalse<Same<Exclude<CronRunStatusName, 'skipped'>, CronRunStatus>>()
