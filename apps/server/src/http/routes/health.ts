import { Hono } from 'hono'
import { sql } from 'kysely'
import type { App } from '../../app/app.js'
import { VERSION } from '../../version.js'
import type { Readiness } from '../readiness.js'

/**
 * `GET /healthz` (never behind the Host or token guards: load balancers and probes call it by
 * whatever address they have) and `GET /api/instances`: the servers sharing this database (issue
 * 14), id, host, pid, version, heartbeat, alive, and who holds each singleton duty's lease.
 */
export function healthRoutes(app: App, readiness: Readiness): Hono {
  const { config, logger } = app
  const routes = new Hono()
  const createdAt = performance.now()

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
    }
    if (!readiness.isReady())
      return c.json({ status: readiness.notReadyStatus(), database: 'unknown', ...base }, 503)
    try {
      await sql`select 1`.execute(app.database.db)
    } catch (error) {
      logger.warn('health check: the database does not answer', { error })
      return c.json({ status: 'unavailable', database: 'unavailable', ...base }, 503)
    }
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
    })
  })

  routes.get('/api/instances', async (c) => {
    const [instances, leases] = await Promise.all([app.instances.list(), app.duties.all()])
    return c.json({ instances, count: instances.length, leases })
  })

  return routes
}
