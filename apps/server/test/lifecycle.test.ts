/**
 * The server's parts start in order and stop in reverse, each stop guarded (issue 21 (12): one
 * failed stop skipped the rest, leaving the database and the host-run lock open).
 */
import { describe, expect, it } from 'vitest'
import { Lifecycle } from '../src/app/lifecycle.js'
import { recordingLogger } from './fixtures/fake-chat-apis.js'

function parts(failing: { start?: string; stop?: string } = {}) {
  const calls: string[] = []
  const logger = recordingLogger()
  const lifecycle = new Lifecycle(logger)
  const part = (name: string) => ({
    name,
    async start() {
      calls.push(`start ${name}`)
      if (failing.start === name) throw new Error(`${name} cannot start`)
    },
    async stop() {
      calls.push(`stop ${name}`)
      if (failing.stop === name) throw new Error(`${name} cannot stop`)
    },
  })
  lifecycle.add({ name: 'database', stop: async () => void calls.push('stop database') }, { held: true })
  for (const name of ['clock', 'cron', 'channels']) lifecycle.add(part(name))
  return { lifecycle, calls, logger }
}

describe('Lifecycle', () => {
  it('starts in order and stops in reverse; held parts stop last', async () => {
    const { lifecycle, calls } = parts()
    await lifecycle.start()
    await lifecycle.stop()
    expect(calls).toEqual([
      'start clock',
      'start cron',
      'start channels',
      'stop channels',
      'stop cron',
      'stop clock',
      'stop database',
    ])
  })

  it('a part that fails to stop is logged and the rest still stop; stop() then names it, once', async () => {
    const { lifecycle, calls, logger } = parts({ stop: 'cron' })
    await lifecycle.start()
    const stopped = lifecycle.stop()
    await expect(stopped).rejects.toThrow('the server stopped, but these parts failed to: cron')
    expect(calls.slice(3)).toEqual(['stop channels', 'stop cron', 'stop clock', 'stop database'])
    expect(logger.entries).toMatchObject([{ level: 'error', fields: { part: 'cron' } }])
    expect(lifecycle.stop()).toBe(stopped)
    expect(calls).toHaveLength(7)
  })

  it('a start that fails stops what started, in reverse, then rethrows', async () => {
    const { lifecycle, calls } = parts({ start: 'cron' })
    await expect(lifecycle.start()).rejects.toThrow('cron cannot start')
    expect(calls).toEqual(['start clock', 'start cron', 'stop clock', 'stop database'])
  })

  it('held parts stop even when start() never ran', async () => {
    const { lifecycle, calls } = parts()
    await lifecycle.stop()
    expect(calls).toEqual(['stop database'])
  })
})
