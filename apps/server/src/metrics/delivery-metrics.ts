import { Counter, type Registry } from 'prom-client'

/** The port cron, background and workflow deliver through (`ChannelSender`, `ChannelNotifier`). */
export interface DeliverySender {
  send(target: string, text: string, options: { readonly signal: AbortSignal }): Promise<void>
}

/** Who delivers: the label `source` of `lango_deliveries_total`. */
export type DeliverySource = 'cron' | 'background' | 'workflow'

/**
 * Wraps the channel router that cron, background and workflow deliver through, counting every send
 * by source, channel and outcome. The channel is the target's part before `:`; a name that is not
 * a configured channel is `unknown` (targets come from users: they must not make time series).
 */
export function deliveryMetrics(
  registry: Registry,
  channels: () => readonly string[],
): (source: DeliverySource, sender: DeliverySender) => DeliverySender {
  const deliveries = new Counter({
    name: 'lango_deliveries_total',
    help: 'Sends of results and notices to a channel target, by source (cron, background, workflow), channel and status (delivered, failed); a retried send counts each attempt.',
    labelNames: ['source', 'channel', 'status'] as const,
    registers: [registry],
  })
  return (source, sender) => ({
    async send(target, text, options) {
      const colon = target.indexOf(':')
      const name = colon === -1 ? target : target.slice(0, colon)
      const channel = channels().includes(name) ? name : 'unknown'
      try {
        await sender.send(target, text, options)
        deliveries.inc({ source, channel, status: 'delivered' })
      } catch (error) {
        deliveries.inc({ source, channel, status: 'failed' })
        throw error
      }
    },
  })
}
