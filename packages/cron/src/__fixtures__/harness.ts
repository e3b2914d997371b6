import type { Kysely } from 'kysely'
import type { CronRun } from '../model.js'
import type { Clock } from '../ports.js'
import { CronService, type CronServiceOptions } from '../service.js'
import type { CronDatabase } from '../sqlite/schema.js'
import { SqliteCronStore } from '../sqlite/sqlite-cron-store.js'
import { FakeClock } from '../testing/fake-clock.js'
import {
  RecordingAgentRunner,
  RecordingChannelSender,
  RecordingShellRunner,
} from '../testing/recording-runners.js'
import { createTestDatabase, type TestDatabase } from './database.js'

/** A service over a real SQLite file, a fake clock and recording ports. */
export interface Harness {
  readonly database: TestDatabase
  readonly clock: FakeClock
  readonly agent: RecordingAgentRunner
  readonly shell: RecordingShellRunner
  readonly sender: RecordingChannelSender
  readonly store: SqliteCronStore
  readonly service: CronService
  /** Another service (own connection, own owner id) on the same file, sharing ports unless given. */
  another(options?: Partial<CronServiceOptions> & { readonly db?: Kysely<CronDatabase> }): CronService
  /** All ledger rows, oldest first. */
  runs(): Promise<CronRun[]>
  cleanup(): Promise<void>
}

export async function createHarness(
  start: string | number,
  options: Partial<CronServiceOptions> & { readonly clockFor?: (clock: FakeClock) => Clock } = {},
): Promise<Harness> {
  const database = await createTestDatabase()
  const clock = new FakeClock(typeof start === 'string' ? Date.parse(start) : start)
  const agent = new RecordingAgentRunner()
  const shell = new RecordingShellRunner()
  const sender = new RecordingChannelSender()
  const store = new SqliteCronStore(database.db)
  const services: CronService[] = []
  let ids = 0
  // The harness's own keys never reach the service: it refuses keys it does not know.
  const { clockFor, ...serviceOptions } = options
  const make = ({
    db,
    ...extra
  }: Partial<CronServiceOptions> & { readonly db?: Kysely<CronDatabase> } = {}) => {
    const instance = services.length
    const service = new CronService({
      store: db === undefined ? store : new SqliteCronStore(db),
      clock: clockFor?.(clock) ?? clock,
      agentRunner: agent,
      shellRunner: shell,
      channelSender: sender,
      defaultTimezone: 'UTC',
      // long virtual spans: keep heartbeats and job syncs sparse
      leaseMs: 3_600_000,
      syncIntervalMs: 600_000,
      ownerId: `owner-${instance}`,
      idGenerator: () => `id-${instance}-${++ids}`,
      ...serviceOptions,
      ...extra,
    })
    services.push(service)
    return service
  }
  const service = make()
  return {
    database,
    clock,
    agent,
    shell,
    sender,
    store,
    service,
    another: (extra) => make({ db: database.connect(), ...extra }),
    async runs() {
      const rows = await store.listRuns({ limit: 500 })
      return rows.reverse()
    },
    async cleanup() {
      for (const each of services) await each.stop().catch(() => {})
      await database.cleanup()
    },
  }
}
