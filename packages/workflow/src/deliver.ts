import { abortable } from './abort.js'
import { WorkflowError } from './errors.js'
import type { Emitter } from './events.js'
import type { ChannelSender, Clock, Logger } from './ports.js'

/** What a delivery needs: the sender, its timeout and where failures are told. */
export interface DeliveryPorts {
  readonly channelSender?: ChannelSender
  readonly clock: Clock
  readonly logger: Logger
  readonly emitter: Emitter
  readonly deliveryTimeoutMs: number
}

/**
 * Sends `text` to every target at once, each send bounded by `deliveryTimeoutMs`. A failure is
 * logged and told as `delivery:error` (with the channel's error as its cause), never thrown: a run's
 * outcome does not depend on its report reaching anyone. Nothing without a sender.
 */
export async function deliverToTargets(
  ports: DeliveryPorts,
  about: { readonly runId: string; readonly workflowName: string; readonly stepId?: string },
  targets: readonly string[],
  text: string,
): Promise<void> {
  const sender = ports.channelSender
  if (sender === undefined) return
  const { clock, logger, emitter } = ports
  const { runId, workflowName, stepId } = about
  await Promise.all(
    targets.map(async (target) => {
      const controller = new AbortController()
      const timer = clock.setTimeout(
        () =>
          controller.abort(new WorkflowError('WORKFLOW_DELIVERY_FAILED', `Delivery to ${target} timed out`)),
        ports.deliveryTimeoutMs,
      )
      try {
        await abortable(sender.send(target, text, { signal: controller.signal }), controller.signal)
      } catch (caught) {
        const error = WorkflowError.is(caught)
          ? caught
          : new WorkflowError('WORKFLOW_DELIVERY_FAILED', `Delivery to ${target} failed`, {
              cause: caught,
              data: { target },
            })
        logger.warn('workflow delivery failed', { runId, stepId, target })
        emitter.emit('delivery:error', {
          runId,
          workflowName,
          ...(stepId === undefined ? {} : { stepId }),
          target,
          error,
        })
      } finally {
        clock.clearTimeout(timer)
      }
    }),
  )
}
