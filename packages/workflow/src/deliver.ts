import { abortable } from './abort.js'
import { WorkflowError } from './errors.js'
import type { Emitter } from './events.js'
import type { RunStatus, StepStatus } from './model.js'
import type { ChannelSender, Clock, Logger } from './ports.js'

/** Longest text one delivery sends; a longer one is cut, ending with `…`. */
export const DELIVERY_TEXT_LIMIT = 3500

/** Cuts `text` to `limit` characters, the last one `…`. */
export function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`
}

/** What a run's end report says. */
export interface RunReport {
  readonly workflowName: string
  readonly status: RunStatus
  readonly error: string | null
  readonly totalSteps: number
  /** Every step of the run, in the file's order, with its status. */
  readonly steps: readonly { readonly id: string; readonly status: StepStatus }[]
  /** The results of the completed steps nothing depends on (the workflow's outcome). */
  readonly results: readonly { readonly id: string; readonly text: string }[]
}

/**
 * The text a run's targets get at its end, however it ended (by its engine, or cancelled where no
 * engine held it): status and steps completed, the error, each step's outcome, then the results of
 * its completed sinks; cut to {@link DELIVERY_TEXT_LIMIT}.
 */
export function runReportText(report: RunReport): string {
  const completed = report.steps.filter((step) => step.status === 'completed').length
  const body = [
    `[Workflow] ${report.workflowName}: ${report.status} (${completed}/${report.totalSteps} steps completed)`,
    report.error === null ? '' : `Error: ${report.error}`,
    report.steps.map((step) => `- ${step.id}: ${step.status}`).join('\n'),
    report.results.map((result) => `${result.id}:\n${result.text}`).join('\n\n'),
  ].filter((part) => part !== '')
  return truncate(body.join('\n\n'), DELIVERY_TEXT_LIMIT)
}

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
