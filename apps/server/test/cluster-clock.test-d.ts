/**
 * The server's one cluster clock is what both packages' `Clock` ports get (issue 14: "leases are
 * compared against one clock"): it must fit `@lango/cron`'s and `@lango/workflow`'s shapes.
 */
import type { Clock as CronClock } from '@lango/cron'
import type { Clock as WorkflowClock } from '@lango/workflow'
import { expectTypeOf, test } from 'vitest'
import type { ClusterClock } from '../src/cluster/clock.js'

test('ClusterClock fits the Clock port of cron and workflow', () => {
  expectTypeOf<ClusterClock>().toExtend<CronClock>()
  expectTypeOf<ClusterClock>().toExtend<WorkflowClock>()
})
