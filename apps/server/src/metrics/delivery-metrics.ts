import type { CronService } from '@lango/cron'
import { Counter, type Registry } from 'prom-client'

/** The port cron, background and workflow deliver through (`ChannelSender`, `ChannelNotifier`). */
export interface DeliverySender {
  send(
    target: string,
    text: string,
    options: { readonly signal: AbortSignal; readonly idempotencyKey?: string },
  ): Promise<void>
}

/** The channel of a target (its part before `:`), or `unknown` when no such channel is configured. */
function channelOf(target: string, channels: () => readonly string[]): string {
  const colon = target.indexOf(':')
  const name = colon === -1 ? target : target.slice(0, colon)
  return channels().includes(name) ? name : 'unknown'
}

/**
 * Counts cron's per-target deliveries from its `delivery:end` events (one per send of a run's result
 * to one target, from the delivery ledger): `lango_cron_target_deliveries_total` by channel and
 * status (`delivered`, `failed` for a final failure, `retrying` for a failed send that will be
 * retried). Returns the unsubscribe function.
 */
export function observeCronDeliveries(
  registry: Registry,
  channels: () => readonly string[],
  cron: Pick<CronService, 'on'>,
): () => void {
  const deliveries = new Counter({
    name: 'lango_cron_target_deliveries_total',
    help: "Sends of cron results to one target (the delivery ledger's rows), by channel and status (delivered, failed: final, retrying: a retry is scheduled).",
    labelNames: ['channel', 'status'] as const,
    registers: [registry],
  })
  return cron.on('delivery:end', (end) => {
    deliveries.inc({ channel: channelOf(end.target, channels), status: end.status })
  })
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
      const channel = channelOf(target, channels)
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
