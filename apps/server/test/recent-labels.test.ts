import { Counter, Registry } from 'prom-client'
import { describe, expect, it } from 'vitest'
import { RecentLabels } from '../src/metrics/recent-labels.js'

/** The `workflow` labels the registry exposes now. */
async function exposed(registry: Registry): Promise<string[]> {
  const metrics = await registry.getMetricsAsJSON()
  return metrics.flatMap((metric) => metric.values.map((sample) => String(sample.labels.workflow)))
}

describe('RecentLabels', () => {
  it('keeps series for the most recently used names only, however many names callers choose', async () => {
    const registry = new Registry()
    const runs = new Counter({
      name: 'runs_total',
      help: 'runs',
      labelNames: ['workflow', 'status'] as const,
      registers: [registry],
    })
    const names = new RecentLabels('workflow', 3, [runs])
    for (let index = 0; index < 50; index += 1) {
      runs.inc({ workflow: names.use(`inline-${index}`), status: 'completed' })
      runs.inc({ workflow: names.use(`inline-${index}`), status: 'failed' })
    }
    await new Promise((resolve) => setImmediate(resolve))
    expect(names.size).toBe(3)
    expect(new Set(await exposed(registry))).toEqual(new Set(['inline-47', 'inline-48', 'inline-49']))
  })

  it('keeps a name used again (least recently used goes first), and forgets one on request', async () => {
    const registry = new Registry()
    const runs = new Counter({
      name: 'runs_total',
      help: 'runs',
      labelNames: ['workflow'] as const,
      registers: [registry],
    })
    const names = new RecentLabels('workflow', 2, [runs])
    runs.inc({ workflow: names.use('nightly') })
    runs.inc({ workflow: names.use('hourly') })
    runs.inc({ workflow: names.use('nightly') })
    runs.inc({ workflow: names.use('once') })
    await new Promise((resolve) => setImmediate(resolve))
    expect(new Set(await exposed(registry))).toEqual(new Set(['nightly', 'once']))
    const nightly = (await runs.get()).values.find((sample) => sample.labels.workflow === 'nightly')
    expect(nightly?.value).toBe(2)
    names.forget('once')
    await new Promise((resolve) => setImmediate(resolve))
    expect(await exposed(registry)).toEqual(['nightly'])
  })
})
