import type { Context, MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import { Counter, Histogram, type Registry } from 'prom-client'

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/**
 * The route pattern that answered (`/api/cron/jobs/:id`), never the raw path, which would make one
 * time series per id. A request no route matched has only the middlewares' wildcards (`*`,
 * `/api/*`): it is `unmatched`.
 */
function routeLabel(c: Context): string {
  const path = routePath(c, -1)
  return path === '' || path.endsWith('*') ? 'unmatched' : path
}

/**
 * The first middleware of the HTTP app: counts every request by method, route pattern and status,
 * refusals (403, 401, 413) included, and times it to its response headers (a server-sent event
 * stream's duration is not its lifetime).
 */
export function httpMetrics(registry: Registry): MiddlewareHandler {
  const registers = [registry]
  const requests = new Counter({
    name: 'lango_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  })
  const duration = new Histogram({
    name: 'lango_http_request_duration_seconds',
    help: 'Time from an HTTP request to its response headers, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers,
  })
  return async (c, next) => {
    const started = performance.now()
    try {
      await next()
    } finally {
      const labels = { method: METHODS.has(c.req.method) ? c.req.method : 'other', route: routeLabel(c) }
      requests.inc({ ...labels, status: String(c.res.status) })
      duration.observe(labels, (performance.now() - started) / 1000)
    }
  }
}
