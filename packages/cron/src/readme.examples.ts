// The README example, type-checked (not built, not exported). Keep the two in step.
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import type { AgentRunner, ChannelSender } from './ports.js'
import { CronService } from './service.js'
import { type CronDatabase, migrateCron, SqliteCronStore } from './sqlite/index.js'

/** README: Example. */
export async function readmeExample(agentRunner: AgentRunner, channelSender: ChannelSender): Promise<void> {
  const database = new Database('lango.db')
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  const db = new Kysely<CronDatabase>({ dialect: new SqliteDialect({ database }) })
  await migrateCron(db)
  await using cron = new CronService({
    store: new SqliteCronStore(db),
    agentRunner,
    channelSender,
    defaultTimezone: 'Europe/Berlin',
  })
  await cron.start()
  const { job, nextRuns } = await cron.add({
    name: 'news',
    scheduleType: 'cron',
    schedule: '0 8 * * 1-5',
    prompt: 'Summarise the headlines',
    deliverTo: ['telegram:42'],
  })
  cron.scheduler.events.on('run:end', ({ run }) => void [run.status, run.result, job.id, nextRuns])
}
