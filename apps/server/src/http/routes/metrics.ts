import { Hono } from 'hono'
import type { Registry } from 'prom-client'

/**
 * `GET /metrics`: what `scrape()` gives in the Prometheus text format (version 0.0.4), for a Prometheus
 * scrape. Behind the Host and token guards like the API: the counts name jobs and workflows.
 */
export function metricsRoutes(scrape: () => Registry): Hono {
  const routes = new Hono()
  routes.get('/', async (c) => {
    const registry = scrape()
    return c.body(await registry.metrics(), 200, { 'Content-Type': registry.contentType })
  })
  return routes
}
