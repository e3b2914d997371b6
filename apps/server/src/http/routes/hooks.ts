import { CronError, WEBHOOK_NAME_PATTERN } from '@lango/cron'
import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import { HookRateLimit } from '../../webhooks/rate-limit.js'
import { WebhookReceipts } from '../../webhooks/receipts.js'
import { checkWebhookHeaders, type VerifyFailure, verifyWebhook } from '../../webhooks/signature.js'
import { errorResponse, readBounded } from '../responses.js'

/** The largest hook call body: 256 KiB. */
const MAX_HOOK_BODY_BYTES = 256 * 1024

/** How many refused calls a minute are logged one by one per hook, as a multiple of `cron.webhook_rate_limit`. */
const LOGGED_REFUSALS_FACTOR = 10

/** The refusal budget's key for every hook together: no hook is named so (names are 1 or more characters). */
const EVERY_HOOK = ''

/** When a call that started nothing may be sent again: the `Retry-After` of a 503, in seconds. */
const NOT_STARTED_RETRY_AFTER_SECONDS = 60

/** How many jobs' reasons a 503's message names; `data.runs` has them all. */
const REASONS_IN_MESSAGE = 5

/** The vault secret a hook's calls are signed with: `webhook.<name>`. */
function hookSecretName(hook: string): string {
  return `webhook.${hook}`
}

/** What one job's trigger did, as the answer lists it. */
interface HookRun {
  readonly job_id: string
  readonly job_name: string
  /** `failed`: the trigger threw (the reason says why); nothing runs. */
  readonly status: 'started' | 'queued' | 'skipped' | 'failed'
  readonly run_id?: string
  readonly reason?: string
}

/**
 * `POST /hooks/<name>`: a signed call from outside starts a run of every enabled `webhook` job whose
 * schedule is `<name>` (a saved workflow's `triggers: [{ webhook: <name> }]` is one such job), with
 * the raw body as the run's untrusted payload. No API token: the Standard Webhooks signature under
 * the vault secret `webhook.<name>` is the authentication. In order: 404 for a name that cannot be a
 * hook; 401 for headers missing, malformed or more than 5 minutes off; 413 for a body over 256 KiB;
 * 401 for a hook with no secret, then for a wrong signature; 429 past `cron.webhook_rate_limit`
 * verified calls a minute; 404 when nothing listens on the hook; 409 for a `webhook-id` accepted
 * before (replay, across restarts and servers); 503 with `Retry-After` when no run started or
 * queued (the receipt is forgotten, so the sender's retry is not a replay); else 202 with the runs.
 *
 * A refused call never uses up the hook's rate: junk cannot lock a signed sender out. It costs at
 * most reading its body (256 KiB) and one HMAC, writes nothing, and is logged one by one only up to
 * {@link LOGGED_REFUSALS_FACTOR} times the rate a minute, per hook and for every hook together.
 */
export function hookRoutes(app: App): Hono {
  const routes = new Hono()
  const rate = app.config.cron.webhookRateLimit
  const limit = new HookRateLimit(rate)
  const refusals = new HookRateLimit(rate * LOGGED_REFUSALS_FACTOR)
  const receipts = new WebhookReceipts(app.database.db)

  /**
   * Logs a refused call within the refusal budgets, the hook's and the one of every hook together
   * (junk spread over many hook names is bounded too); past one, says once that the rest go unlogged.
   */
  const noteRefusal = (
    hook: string,
    now: number,
    reason: VerifyFailure['kind'] | 'no-secret',
    fields: Record<string, unknown> = {},
  ) => {
    const everyHook = refusals.note(EVERY_HOOK, now)
    const thisHook = refusals.note(hook, now)
    const perMinute = rate * LOGGED_REFUSALS_FACTOR
    if (everyHook === 'ran-out')
      app.logger.warn('webhook calls refused in a burst: further refusals are not logged for now', {
        perMinute,
      })
    else if (everyHook === 'over') return
    else if (thisHook === 'counted') app.logger.info('webhook call refused', { hook, reason, ...fields })
    else if (thisHook === 'ran-out')
      app.logger.warn(
        'webhook calls refused in a burst: further refusals of this hook are not logged for now',
        { hook, perMinute },
      )
  }

  routes.post('/:name', async (c) => {
    const hook = c.req.param('name')
    if (!app.config.cron.enabled || !WEBHOOK_NAME_PATTERN.test(hook)) {
      return errorResponse(c, 'NOT_FOUND', `no hook ${hook.slice(0, 64)}`)
    }
    const now = app.clock.now().getTime()
    const call = {
      id: c.req.header('webhook-id'),
      timestamp: c.req.header('webhook-timestamp'),
      signature: c.req.header('webhook-signature'),
    }
    // What needs neither the body nor the database first: most junk ends here.
    const malformed = checkWebhookHeaders(call, now)
    if (malformed !== undefined) {
      noteRefusal(hook, now, malformed.kind)
      return errorResponse(c, 'WEBHOOK_UNAUTHORIZED', malformed.message)
    }
    const declared = Number(c.req.header('content-length') ?? '0')
    if (declared > MAX_HOOK_BODY_BYTES) return bodyTooLarge(c)
    let vaultError: unknown
    const secret = await app
      .vault()
      .then((vault) => vault.get(hookSecretName(hook)))
      .catch((error: unknown) => {
        vaultError = error
        return undefined
      })
    if (secret === undefined) {
      noteRefusal(hook, now, 'no-secret', {
        secret: hookSecretName(hook),
        ...(vaultError === undefined ? {} : { error: vaultError }),
      })
      return errorResponse(c, 'WEBHOOK_UNAUTHORIZED', 'the webhook signature does not verify')
    }
    const body = await readBounded(c, MAX_HOOK_BODY_BYTES)
    if (body === undefined) return bodyTooLarge(c)
    const failure = verifyWebhook(call, body, secret, now)
    if (failure !== undefined) {
      noteRefusal(hook, now, failure.kind)
      return errorResponse(c, 'WEBHOOK_UNAUTHORIZED', failure.message)
    }
    // Verified: only such calls count toward the hook's rate.
    const waitMs = limit.take(hook, now)
    if (waitMs > 0) {
      c.header('Retry-After', String(Math.ceil(waitMs / 1000)))
      return errorResponse(
        c,
        'WEBHOOK_RATE_LIMITED',
        `hook ${hook} takes at most ${rate} signed calls a minute (cron.webhook_rate_limit); try again later`,
      )
    }
    // Only this hook's jobs: an indexed lookup, whatever the number of jobs.
    const jobs = await app.cron.list({ enabled: true, scheduleType: 'webhook', schedule: hook })
    if (jobs.length === 0) {
      return errorResponse(c, 'NOT_FOUND', `no enabled job or workflow is triggered by hook ${hook}`)
    }
    const id = call.id as string
    if (!(await receipts.recordOnce(hook, id, now))) {
      return errorResponse(
        c,
        'WEBHOOK_REPLAYED',
        `the call ${id.slice(0, 64)} to hook ${hook} was accepted before`,
      )
    }
    const payload = new TextDecoder().decode(body)
    const runs: HookRun[] = []
    for (const job of jobs) {
      try {
        const result = await app.cron.trigger(job.id, { payload })
        runs.push({
          job_id: job.id,
          job_name: job.name,
          status: result.status,
          ...(result.runId === undefined ? {} : { run_id: result.runId }),
          ...(result.reason === undefined ? {} : { reason: result.reason }),
        })
      } catch (error) {
        app.logger.warn('webhook trigger failed', { hook, job: job.name, error })
        runs.push({
          job_id: job.id,
          job_name: job.name,
          status: 'failed',
          reason: CronError.is(error)
            ? error.message
            : 'the run could not be started (the server log has the details)',
        })
      }
    }
    if (!runs.some((run) => run.status === 'started' || run.status === 'queued')) {
      // Nothing will run: the sender must be able to send the call again.
      await receipts.forget(hook, id, now).catch((error: unknown) => {
        app.logger.warn('webhook receipt not forgotten: a retry of the call will be a replay', {
          hook,
          error,
        })
      })
      app.logger.warn('webhook call started nothing', { hook, id: id.slice(0, 64), runs: runs.length })
      const reasons = runs
        .slice(0, REASONS_IN_MESSAGE)
        .map((run) => `${run.job_name}: ${run.status}${run.reason === undefined ? '' : ` (${run.reason})`}`)
      const more = runs.length > REASONS_IN_MESSAGE ? `; and ${runs.length - REASONS_IN_MESSAGE} more` : ''
      c.header('Retry-After', String(NOT_STARTED_RETRY_AFTER_SECONDS))
      return errorResponse(
        c,
        'WEBHOOK_NOT_STARTED',
        `no run started for hook ${hook}, so the call was not recorded: send it again later (${reasons.join('; ')}${more})`,
        { data: { hook, id, runs } },
      )
    }
    app.logger.info('webhook call accepted', { hook, id: id.slice(0, 64), runs: runs.length })
    return c.json({ hook, id, runs }, 202)
  })
  return routes
}

function bodyTooLarge(c: Parameters<typeof errorResponse>[0]): Response {
  return errorResponse(c, 'BODY_TOO_LARGE', `a hook call's body is at most ${MAX_HOOK_BODY_BYTES} bytes`)
}
