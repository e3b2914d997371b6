import { type CronJob, WEBHOOK_NAME_PATTERN } from '@lango/cron'
import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import { HookRateLimit } from '../../webhooks/rate-limit.js'
import { WebhookReceipts } from '../../webhooks/receipts.js'
import { verifyWebhook } from '../../webhooks/signature.js'
import { errorResponse, readBounded } from '../responses.js'

/** The largest hook call body: 256 KiB. */
const MAX_HOOK_BODY_BYTES = 256 * 1024

/** The vault secret a hook's calls are signed with: `webhook.<name>`. */
function hookSecretName(hook: string): string {
  return `webhook.${hook}`
}

/**
 * `POST /hooks/<name>`: a signed call from outside starts a run of every enabled `webhook` job whose
 * schedule is `<name>` (a saved workflow's `triggers: [{ webhook: <name> }]` is one such job), with
 * the raw body as the run's untrusted payload. No API token: the Standard Webhooks signature under
 * the vault secret `webhook.<name>` is the authentication. In order: 404 for a name that cannot be a
 * hook, 429 past `cron.webhook_rate_limit` calls a minute (signed or not), 413 for a body over
 * 256 KiB, 401 for a call that does not verify (missing headers, a timestamp more than 5 minutes
 * off, a wrong signature, or no secret for the hook), 404 when nothing listens on the hook, 409 for
 * a `webhook-id` accepted before (replay, across restarts and servers), else 202 with the runs.
 */
export function hookRoutes(app: App): Hono {
  const routes = new Hono()
  const limit = new HookRateLimit(app.config.cron.webhookRateLimit)
  const receipts = new WebhookReceipts(app.database.db)
  routes.post('/:name', async (c) => {
    const hook = c.req.param('name')
    if (!app.config.cron.enabled || !WEBHOOK_NAME_PATTERN.test(hook)) {
      return errorResponse(c, 'NOT_FOUND', `no hook ${hook.slice(0, 64)}`)
    }
    const now = app.clock.now().getTime()
    const waitMs = limit.take(hook, now)
    if (waitMs > 0) {
      c.header('Retry-After', String(Math.ceil(waitMs / 1000)))
      return errorResponse(
        c,
        'WEBHOOK_RATE_LIMITED',
        `hook ${hook} takes at most ${app.config.cron.webhookRateLimit} calls a minute (cron.webhook_rate_limit); try again later`,
      )
    }
    const declared = Number(c.req.header('content-length') ?? '0')
    const body = declared > MAX_HOOK_BODY_BYTES ? undefined : await readBounded(c, MAX_HOOK_BODY_BYTES)
    if (body === undefined) {
      return errorResponse(c, 'BODY_TOO_LARGE', `a hook call's body is at most ${MAX_HOOK_BODY_BYTES} bytes`)
    }
    const secret = await app
      .vault()
      .then((vault) => vault.get(hookSecretName(hook)))
      .catch((error: unknown) => {
        app.logger.warn('webhook secret unavailable', { hook, error })
        return undefined
      })
    const call = {
      id: c.req.header('webhook-id'),
      timestamp: c.req.header('webhook-timestamp'),
      signature: c.req.header('webhook-signature'),
    }
    if (secret === undefined) {
      app.logger.warn('webhook call refused: no signing secret', { hook, secret: hookSecretName(hook) })
      return errorResponse(c, 'WEBHOOK_UNAUTHORIZED', 'the webhook signature does not verify')
    }
    const failure = verifyWebhook(call, body, secret, now)
    if (failure !== undefined) {
      app.logger.info('webhook call refused', { hook, reason: failure.kind })
      return errorResponse(c, 'WEBHOOK_UNAUTHORIZED', failure.message)
    }
    const jobs = (await app.cron.list({ enabled: true })).filter(
      (job: CronJob) => job.scheduleType === 'webhook' && job.schedule === hook,
    )
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
    const runs = []
    for (const job of jobs) {
      const result = await app.cron.trigger(job.id, { payload })
      runs.push({
        job_id: job.id,
        job_name: job.name,
        status: result.status,
        ...(result.runId === undefined ? {} : { run_id: result.runId }),
        ...(result.reason === undefined ? {} : { reason: result.reason }),
      })
    }
    app.logger.info('webhook call accepted', { hook, id: id.slice(0, 64), runs: runs.length })
    return c.json({ hook, id, runs }, 202)
  })
  return routes
}
