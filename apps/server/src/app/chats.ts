import type { AgentRunner } from '../agent/index.js'
import type { ChannelRouter } from '../channels/router.js'
import type { SingletonDuties } from '../cluster/leases.js'
import type { Logger } from '../logger.js'
import type { Part } from './lifecycle.js'

/**
 * The channels as a part of the server: chats in start with it, and stop with it (turns in flight
 * are aborted). Each message is an agent turn in the session `<channel>:<chat>:<user>`, whose
 * approvals are asked in that chat. A channel that cannot start (a bad token, another process
 * polling the same bot) is logged; the server runs without it.
 */
export function chatsPart(
  channels: ChannelRouter,
  agent: AgentRunner,
  duties: SingletonDuties,
  logger: Logger,
): Part {
  return {
    name: 'channels',
    async start() {
      const receiving = await channels.start(
        async (message, { sessionKey, signal }) => {
          const turn = await agent.chat(sessionKey, message.text, {
            signal,
            approvalGate: { request: (request, options) => channels.requestApproval(request, options) },
          })
          return turn.text
        },
        // One poller per Telegram bot token in the whole cluster: the holder of its lease.
        {
          exclusive: (receiver) =>
            duties.add({ name: `receive:${receiver.key}`, kind: receiver.channel, ...receiver }),
        },
      )
      for (const { channel, error } of receiving.failed) {
        logger.error('channel not started', { channel, error })
      }
    },
    // No more chats in; turns in flight are aborted.
    stop: () => channels.stop(),
  }
}
