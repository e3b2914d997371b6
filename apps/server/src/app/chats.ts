import type { ApprovalGate } from '@lango/tools'
import type { AgentRunner } from '../agent/index.js'
import type { Approvals, ApprovalView } from '../approvals.js'
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
  approvals: Approvals,
): Part {
  const approvalGate = recordedChatGate(channels, approvals, logger)
  return {
    name: 'channels',
    async start() {
      const receiving = await channels.start(
        async (message, { sessionKey, signal }) => {
          const turn = await agent.chat(sessionKey, message.text, {
            signal,
            approvalGate,
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

/**
 * A chat's approvals, recorded like every other (docs/architecture.md): each request is a pending
 * approval in the database first (listed by `GET /api/approvals`, the dashboard and `lango
 * approvals`, counted in `lango_approvals_pending`, bounded like the rest), then asked in the chat
 * with its buttons. Whichever answers first decides: a press is recorded with the chat session as
 * `decided_by`, and an answer given elsewhere (the API, the CLI, another process) takes the buttons
 * away. A channel that cannot ask leaves the approval to those other places.
 */
function recordedChatGate(channels: ChannelRouter, approvals: Approvals, logger: Logger): ApprovalGate {
  return {
    async request(request, { signal }) {
      const local = new AbortController()
      const both = AbortSignal.any([signal, local.signal])
      let announce: (view: ApprovalView) => void = () => {}
      const announced = new Promise<ApprovalView>((resolve) => {
        announce = resolve
      })
      const recorded = approvals.gate(announce).request(request, { signal: both })
      try {
        // Refused before anyone is asked (too many waiting, too long to show): so is the chat.
        const first = await Promise.race([announced, recorded.then(() => undefined)])
        if (first === undefined) return await recorded
        const view = first
        // A press decides the recorded approval; an answer given elsewhere settles `recorded` first.
        void channels
          .requestApproval(request, { signal: both })
          .then(async (answer) => {
            if (answer === undefined) return
            await approvals.answer(view.id, answer, {
              ...(request.sessionKey === undefined ? {} : { decidedBy: request.sessionKey }),
            })
          })
          .catch((error: unknown) => {
            if (!both.aborted) logger.warn('chat approval failed; the approval waits elsewhere', { error })
          })
        return await recorded
      } finally {
        // Answered (or ended) in one place: the other stops asking.
        local.abort(new DOMException('the approval was answered', 'AbortError'))
      }
    },
    settled: (request, outcome) => approvals.settled(request, outcome),
  }
}
