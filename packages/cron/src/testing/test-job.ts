import type { CronJob } from '../model.js'

let sequence = 0

/** A complete, valid job for tests; override any field. */
export function createTestJob(overrides: Partial<CronJob> = {}): CronJob {
  sequence++
  return {
    id: `job-${sequence}`,
    name: `job-${sequence}`,
    kind: 'ai',
    scheduleType: 'cron',
    schedule: '*/5 * * * *',
    timezone: 'UTC',
    prompt: 'Summarise the news',
    command: null,
    cwd: null,
    model: null,
    sessionMode: 'isolated',
    deliverTo: [],
    enabled: true,
    timeoutMs: 60_000,
    overlap: 'skip',
    catchup: 'latest',
    notify: 'always',
    createdAt: 1_000,
    updatedAt: 1_000,
    lastRunAt: null,
    nextRunAt: 300_000,
    lastStatus: null,
    consecutiveFailures: 0,
    pauseReason: null,
    createdBy: null,
    pingUrl: null,
    when: null,
    maxTokensPerDay: null,
    maxCostPerDay: null,
    ...overrides,
  }
}
