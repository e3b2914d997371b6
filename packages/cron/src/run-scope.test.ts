/**
 * `runScope` wraps the whole of each run (issue 23): the host's context (apps/server's trace span)
 * is the one the agent, shell and channel ports see, delivery included.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, type Harness } from './__fixtures__/harness.js'
import type { ChannelSender, RunScopeInfo, ShellRunner } from './ports.js'

const MINUTE = 60_000
let harness: Harness | undefined

afterEach(async () => {
  await harness?.cleanup()
  harness = undefined
})

describe('runScope', () => {
  it('runs each run inside the scope: the shell and channel ports see its context; run:end is emitted inside it', async () => {
    const storage = new AsyncLocalStorage<string>()
    const scoped: RunScopeInfo[] = []
    const seen: { port: string; context: string | undefined }[] = []
    const shellRunner: ShellRunner = {
      async run() {
        seen.push({ port: 'shell', context: storage.getStore() })
        return { exitCode: 0, stdout: 'ok', stderr: '' }
      },
    }
    const channelSender: ChannelSender = {
      async send() {
        await Promise.resolve()
        seen.push({ port: 'channel', context: storage.getStore() })
      },
    }
    harness = await createHarness('2026-01-01T00:00:00Z', {
      shellRunner,
      channelSender,
      runScope: (run, work) => {
        scoped.push(run)
        return storage.run(`run ${run.runId}`, work)
      },
    })
    const { service } = harness
    service.on('run:end', () => seen.push({ port: 'run:end', context: storage.getStore() }))
    await service.start()
    await service.add({
      name: 'disk',
      scheduleType: 'every',
      schedule: '1h',
      command: 'df -h',
      deliverTo: ['telegram:1'],
    })
    const ended = service.scheduler.events.next('run:end')
    await harness.clock.advance(60 * MINUTE)
    const { run } = await ended
    expect(run).toMatchObject({ status: 'completed', deliveryStatus: 'delivered' })
    expect(scoped).toEqual([
      { jobId: run.jobId, jobName: 'disk', runId: run.id, kind: 'shell', trigger: 'schedule' },
    ])
    expect(seen).toEqual([
      { port: 'shell', context: `run ${run.id}` },
      { port: 'channel', context: `run ${run.id}` },
      { port: 'run:end', context: `run ${run.id}` },
    ])
  })
})
