/**
 * `@lango/background/testing/vitest`: contract suites for adapters of the ports, written for vitest
 * (an optional peer dependency). The fakes live in `@lango/background/testing`, which imports no
 * test runner.
 */
import { describe, expect, it } from 'vitest'
import type { AgentRunner, ChannelNotifier } from '../ports.js'

/**
 * The behaviour every `AgentRunner` adapter should show. Call it from the adapter's test file.
 *
 * @example
 * agentRunnerContract('OpenAiAgentRunner', () => new OpenAiAgentRunner({ model: stubModel }))
 */
export function agentRunnerContract(
  name: string,
  makeRunner: () => AgentRunner | Promise<AgentRunner>,
): void {
  describe(`AgentRunner contract: ${name}`, () => {
    it('resolves with { text } for a prompt', async () => {
      const runner = await makeRunner()
      const result = await runner.run(
        { prompt: 'Reply with the word ok.', sessionKey: 'bg:contract' },
        { signal: new AbortController().signal },
      )
      expect(typeof result.text).toBe('string')
    })

    it('rejects with signal.reason when the signal aborted before the call', async () => {
      const runner = await makeRunner()
      const reason = new Error('aborted before')
      const run = runner.run(
        { prompt: 'Never run.', sessionKey: 'bg:contract' },
        { signal: AbortSignal.abort(reason) },
      )
      await expect(run).rejects.toBe(reason)
    })

    it('rejects with signal.reason when the signal aborts during the call', async () => {
      const runner = await makeRunner()
      const controller = new AbortController()
      const reason = new Error('aborted during')
      const run = runner.run(
        { prompt: 'Take your time.', sessionKey: 'bg:contract' },
        { signal: controller.signal },
      )
      controller.abort(reason)
      await expect(run).rejects.toBe(reason)
    })
  })
}

/**
 * The behaviour every `ChannelNotifier` adapter should show. Call it from the adapter's test file.
 *
 * @example
 * channelNotifierContract('TelegramSender', () => new TelegramSender({ bot: fakeBot }))
 */
export function channelNotifierContract(
  name: string,
  makeNotifier: () => ChannelNotifier | Promise<ChannelNotifier>,
  options?: { readonly target?: string },
): void {
  const target = options?.target ?? 'test:contract'
  describe(`ChannelNotifier contract: ${name}`, () => {
    it('resolves once the text is handed over', async () => {
      const notifier = await makeNotifier()
      await expect(
        notifier.send(target, '[Background] Task contract done', { signal: new AbortController().signal }),
      ).resolves.toBeUndefined()
    })

    it('rejects with signal.reason when the signal aborted before the call', async () => {
      const notifier = await makeNotifier()
      const reason = new Error('aborted before')
      await expect(notifier.send(target, 'never sent', { signal: AbortSignal.abort(reason) })).rejects.toBe(
        reason,
      )
    })
  })
}
