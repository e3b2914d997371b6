/**
 * An outside probe: a misspelt option (`maxConcurentTasks`, `timeout` for `timeoutMs`) was dropped
 * without a word. Now it is `BACKGROUND_INVALID_INPUT` naming the key, the closest known one and
 * what is accepted. Through the public API.
 */
import { describe, expect, it } from 'vitest'
import { BackgroundError, BackgroundManager } from '../src/index.js'
import { RecordingAgentRunner, RecordingChannelSender } from '../src/testing/index.js'

const unknownField = (field: string, suggestion?: string) =>
  expect.objectContaining({
    name: 'BackgroundError',
    code: 'BACKGROUND_INVALID_INPUT',
    message: expect.stringContaining(`unknown option "${field}"`),
    data: expect.objectContaining({
      field,
      accepted: expect.any(Array),
      ...(suggestion === undefined ? {} : { suggestion }),
    }),
  })

function ports() {
  return { agentRunner: new RecordingAgentRunner(), channelSender: new RecordingChannelSender() }
}

describe('unknown option keys', () => {
  it('the constructor refuses a misspelt option, naming the closest one and what is accepted', () => {
    let error: unknown
    try {
      new BackgroundManager({ ...ports(), maxConcurentTasks: 3 } as never)
    } catch (caught) {
      error = caught
    }
    expect(error).toEqual(unknownField('maxConcurentTasks', 'maxConcurrentTasks'))
    expect(BackgroundError.is(error)).toBe(true)
    expect((error as Error).message).toMatch(
      /^unknown option "maxConcurentTasks" in BackgroundManager options \(did you mean "maxConcurrentTasks"\?\); accepted: agentRunner, channelSender, /,
    )
  })

  it('submit refuses an unknown key and queues nothing; list, wait, whenIdle and stop too', async () => {
    const { agentRunner, channelSender } = ports()
    const manager = new BackgroundManager({ agentRunner, channelSender })
    manager.start()
    expect(() => manager.submit({ prompt: 'work', timeout: 1000 } as never)).toThrow(
      unknownField('timeout', 'timeoutMs'),
    )
    expect(manager.list()).toEqual([])
    expect(agentRunner.calls).toEqual([])
    expect(() => manager.list({ state: 'done' } as never)).toThrow(unknownField('state', 'status'))
    const id = manager.submit({ prompt: 'work' })
    await expect(manager.wait(id, { signl: undefined } as never)).rejects.toEqual(
      unknownField('signl', 'signal'),
    )
    await expect(manager.whenIdle({ sigal: undefined } as never)).rejects.toEqual(
      unknownField('sigal', 'signal'),
    )
    await expect(manager.stop({ grace: 1 } as never)).rejects.toEqual(unknownField('grace'))
    await manager.stop()
  })
})
