import { collectDefaultMetrics, Registry } from 'prom-client'

/** The process's own metrics, collected once however many apps the process makes. */
let processRegistry: Registry | undefined

/**
 * A registry of its own for one app (never prom-client's global one), so several apps in one
 * process (tests, a host with two) do not collide. It serves the app's `lango_*` metrics beside the
 * process metrics prom-client collects by default (`process_*`, `nodejs_*`: CPU, memory, event-loop
 * lag, GC), which are the process's and so collected once per process: each collection starts an
 * event-loop monitor and a GC observer that live as long as the process does.
 */
export function createMetricsRegistry(): { readonly app: Registry; readonly scrape: () => Registry } {
  const app = new Registry()
  return {
    app,
    scrape: () => {
      if (processRegistry === undefined) {
        processRegistry = new Registry()
        collectDefaultMetrics({ register: processRegistry })
      }
      return Registry.merge([processRegistry, app])
    },
  }
}
