import type { Register } from '../command.js'
import type { CommandContext } from '../context.js'
import { EXIT } from '../errors.js'
import { checkChannels } from './channels.js'
import { type CheckResult, safeMessage } from './check.js'
import { checkConfig } from './config.js'
import { checkCronJobs } from './cron-jobs.js'
import { checkDatabase } from './database.js'
import { checkDeliveries } from './deliveries.js'
import { checkModel } from './model.js'
import { checkBetterSqlite, checkPty } from './native.js'
import { renderChecks } from './render.js'
import { checkSecretLengths } from './secrets.js'
import { checkServer } from './server.js'

/** `lango doctor [--json]`: every check, what to do about each problem; exit 1 if any failed. */
export const registerDoctor: Register = (program, action) => {
  program
    .command('doctor')
    .description('check the configuration, database, native modules, server, cron jobs, model and channels')
    .action(
      action(async (context) => {
        const checks = await runChecks(context)
        const ok = checks.every((check) => check.status !== 'fail')
        return {
          data: { ok, checks },
          exitCode: ok ? EXIT.ok : EXIT.failure,
          render: (out) => renderChecks(out, checks),
        }
      }),
    )
}

/** Runs every check; never throws (a check that breaks is reported as failed). */
async function runChecks(context: CommandContext): Promise<CheckResult[]> {
  const { check: configCheck, config } = await checkConfig(context)
  const skipped = (name: string): CheckResult => ({
    name,
    status: 'warn',
    message: 'not checked: the configuration does not load',
    fix: 'fix the configuration first',
  })
  const guarded = (name: string, run: () => Promise<CheckResult | CheckResult[]>) =>
    run().catch(
      (error: unknown): CheckResult => ({
        name,
        status: 'fail',
        message: `the check itself failed: ${safeMessage(error)}`,
      }),
    )
  const results = await Promise.all([
    config === undefined ? skipped('database') : guarded('database', () => checkDatabase(config)),
    guarded('better-sqlite3', checkBetterSqlite),
    guarded('node-pty', checkPty),
    guarded('server', () => checkServer(context)),
    guarded('cron jobs', () => checkCronJobs(context)),
    guarded('deliveries', () => checkDeliveries(context)),
    config === undefined
      ? skipped('secret lengths')
      : guarded('secret lengths', async () => checkSecretLengths(config)),
    config === undefined ? skipped('model') : guarded('model', () => checkModel(config)),
    config === undefined ? skipped('channels') : guarded('channels', () => checkChannels(config)),
  ])
  return [configCheck, ...results.flat()]
}
