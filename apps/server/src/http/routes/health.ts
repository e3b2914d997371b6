import type { StallCause } from '@lango/cron'
import { Hono } from 'hono'
import { sql } from 'kysely'
import type { App } from '../../app/app.js'
import { VERSION } from '../../version.js'
import type { Readiness } from '../readiness.js'

/**
 * How long `/healthz` waits for the database before answering 503 `unavailable`: under the 2–5 s
 * timeouts probes use (Kubernetes' default is 1 s of its own; a database that takes longer than
 * this to answer `select 1` is not healthy either).
 */
const HEALTH_DATABASE_DEADLINE_MS = 2000

/** Pings given up at their deadline that may still hold a connection of the pool (of 10). */
const MAX_ABANDONED_PINGS = 3

/** `work`, or a rejection once `ms` have passed (after calling `onDeadline`). */
async function withDeadline(work: Promise<void>, ms: number, onDeadline: () => void): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onDeadline()
      reject(new Error(`the database did not answer within ${ms} ms`))
    }, ms)
  })
  try {
    await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * `GET /healthz` (never behind the Host or token guards: load balancers and probes call it by
 * whatever address they have; 503 while starting or stopping, when the database does not answer,
 * or when the scheduler is stale: its last tick is older than `cluster.lease`, three of its ticks)
 * and `GET /api/instances`: the servers sharing this database (issue
 * 14), id, host, pid, version, heartbeat, alive, and who holds each singleton duty's lease.
 * `GET /api/alerts`: how the operator alerts stand (sent, failed, failing and why).
 */
export function healthRoutes(app: App, readiness: Readiness): Hono {
  const { config, logger } = app
  const routes = new Hono()
  const createdAt = performance.now()
  let staleLogged = false
  // One database ping at a time, whatever the number of probes: while the database hangs, probes
  // are answered at the deadline and do not queue more statements behind the one in flight. A ping
  // past its deadline is given up (it may never answer: its connection lost mid-reply) and the next
  // probe sends a new one, but at most MAX_ABANDONED_PINGS given-up pings hold a connection of the
  // pool at once; beyond that probes wait on the newest.
  let ping: Promise<void> | undefined
  let abandoned = 0
  const pingDatabase = (): Promise<void> => {
    if (ping !== undefined) return ping
    const pending: Promise<void> = sql`select 1`
      .execute(app.database.db)
      .then(() => undefined)
      .finally(() => {
        if (ping === pending) ping = undefined
      })
    ping = pending
    return pending
  }
  const abandon = (given: Promise<void>): void => {
    // Another probe's deadline may have given it up already, and a newer ping be in flight.
    if (ping !== given || abandoned >= MAX_ABANDONED_PINGS) return
    abandoned++
    ping = undefined
    given.then(
      () => abandoned--,
      () => abandoned--,
    )
  }

  routes.get('/healthz', async (c) => {
    const base = {
      version: VERSION,
      instance: app.instances.id,
      scheduler: !config.cron.enabled ? 'disabled' : app.cron.scheduler.isRunning ? 'running' : 'stopped',
      uptime_ms: Math.round(performance.now() - createdAt),
      /** The singleton duties' leases this instance holds (Telegram polling, retention). */
      leases: app.duties.held(),
      /** This instance's time against the database's (PostgreSQL), which every lease is compared on. */
      clock: app.clock.reading(),
      /** The scheduler's last maintenance tick (every third of the lease) and whether it is stale. */
      scheduler_tick: schedulerTick(app),
      /** Whether the operator's alerts get through (`alerts.deliver_to`); details behind the token at `/api/alerts`. */
      alerts: { configured: app.alerts.targets.length > 0, failing: app.alerts.status().failing },
    }
    if (!readiness.isReady())
      return c.json({ status: readiness.notReadyStatus(), database: 'unknown', ...base }, 503)
    try {
      const current = pingDatabase()
      await withDeadline(current, HEALTH_DATABASE_DEADLINE_MS, () => abandon(current))
    } catch (error) {
      logger.warn('health check: the database does not answer', { error })
      return c.json({ status: 'unavailable', database: 'unavailable', ...base }, 503)
    }
    // Reads answer, writes fail (a full disk, a read-only file): as good as down for a scheduler.
    const unwritable = app.instances.writeFailure()
    if (unwritable !== undefined) {
      const message = `the database refuses writes since ${new Date(unwritable.since).toISOString()}: ${unwritable.error}`
      return c.json(
        {
          status: 'unavailable',
          database: 'unwritable',
          database_kind: config.database.kind,
          ...base,
          error: { code: 'SERVER_DATABASE_UNAVAILABLE', message },
        },
        503,
      )
    }
    if (base.scheduler_tick.stale) {
      // Once per stale spell, not once per probe.
      if (!staleLogged) logger.warn('health check: the scheduler is stale', { ...base.scheduler_tick })
      staleLogged = true
      return c.json({ status: 'stalled', database: 'ok', database_kind: config.database.kind, ...base }, 503)
    }
    staleLogged = false
    return c.json({
      status: 'ok',
      version: VERSION,
      instance: base.instance,
      database: 'ok',
      database_kind: config.database.kind,
      scheduler: base.scheduler,
      uptime_ms: base.uptime_ms,
      leases: base.leases,
      clock: base.clock,
      scheduler_tick: base.scheduler_tick,
      alerts: base.alerts,
    })
  })

  routes.get('/api/alerts', (c) => {
    const status = app.alerts.status()
    return c.json({
      targets: status.targets,
      raised: status.raised,
      sent: status.sent,
      failed: status.failed,
      dropped: status.dropped,
      failing: status.failing,
      waiting: status.waiting,
      last_error: status.lastError ?? null,
      last_sent_at: status.lastSentAt ?? null,
    })
  })

  routes.get('/api/instances', async (c) => {
    const [instances, leases] = await Promise.all([app.instances.list(), app.duties.all()])
    // The servers this one took for dead in the last day: their rows are gone from `instances`.
    const lost = app.instances.recentlyLost().map((instance) => ({
      id: instance.id,
      host: instance.host,
      pid: instance.pid,
      version: instance.version,
      started_at: new Date(instance.startedAt).toISOString(),
      heartbeat_at: new Date(instance.heartbeatAt).toISOString(),
      lease_ms: instance.leaseMs,
      found_at: new Date(instance.foundAt).toISOString(),
    }))
    return c.json({ instances, count: instances.length, leases, lost })
  })

  return routes
}

/**
 * `{ last_tick_at, stale, stale_after_ms }` of the cron scheduler (`CronScheduler.health()` of @lango/cron);
 * with cron disabled or stopped there is no tick and it is never stale.
 */
function schedulerTick(app: App): {
  readonly last_tick_at: string | null
  readonly stale: boolean
  readonly stale_after_ms: number
  readonly last_stall: {
    readonly since: string
    readonly resumed_at: string
    readonly stalled_ms: number
    readonly cause: StallCause
  } | null
} {
  const health = app.cron.scheduler.health()
  const stall = health.lastStall
  return {
    last_tick_at: health.lastTickAt?.toISOString() ?? null,
    stale: health.stale,
    stale_after_ms: health.staleAfterMs,
    // A process that was stopped or blocked could not answer then: this is what it says afterwards.
    last_stall:
      stall === undefined
        ? null
        : {
            since: new Date(stall.since).toISOString(),
            resumed_at: new Date(stall.resumedAt).toISOString(),
            stalled_ms: stall.stalledMs,
            cause: stall.cause,
          },
  }
}
