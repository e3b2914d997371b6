import { collectDefaultMetrics, Registry } from 'prom-client'

/**
 * A registry of its own for one app (never prom-client's global one), so several apps in one
 * process (tests) do not collide, with the process metrics prom-client collects by default
 * (`process_*`, `nodejs_*`: CPU, memory, event-loop lag, GC).
 */
export function createMetricsRegistry(): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  return registry
}
