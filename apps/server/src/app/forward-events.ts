import type { BackgroundManager } from '@lango/background'
import type { CronService } from '@lango/cron'
import type { WorkflowEngine } from '@lango/workflow'
import { workflowDeliveryReason } from '../alerts/sources.js'
import type { EventHub } from '../events.js'

/** Publishes the packages' state changes on the hub (`GET /api/events`). */
export function forwardEvents(
  events: EventHub,
  cron: CronService,
  engine: WorkflowEngine,
  background: BackgroundManager,
): void {
  const on = cron
  on.on('run:start', ({ job, run: started }) =>
    events.emit('cron.run.start', {
      job_id: job.id,
      job_name: job.name,
      run_id: started.id,
      trigger: started.trigger,
    }),
  )
  on.on('run:end', ({ job, run: ended }) =>
    events.emit('cron.run.end', {
      job_id: job.id,
      job_name: job.name,
      run_id: ended.id,
      status: ended.status,
      delivery_status: ended.deliveryStatus,
    }),
  )
  on.on('schedule:fire', (fire) => {
    if (fire.outcome === 'skipped')
      events.emit('cron.run.skipped', {
        job_id: fire.jobId,
        job_name: fire.jobName,
        reason: fire.reason ?? null,
      })
  })
  on.on('job:pause', ({ job, reason }) =>
    events.emit('cron.job.paused', { job_id: job.id, job_name: job.name, reason }),
  )
  // Jobs created, changed, paused, resumed or removed by anyone (API, CLI, chat, MCP, agents).
  on.on('job:change', ({ job, change }) =>
    events.emit(`cron.job.${change}`, { job_id: job.id, job_name: job.name }),
  )
  engine.on('run:start', (e) =>
    events.emit('workflow.run.start', { run_id: e.runId, workflow: e.workflowName, resumed: e.resumed }),
  )
  engine.on('run:end', (e) =>
    events.emit('workflow.run.end', {
      run_id: e.runId,
      workflow: e.workflowName,
      status: e.status,
      error: e.error,
    }),
  )
  engine.on('step:start', (e) =>
    events.emit('workflow.step.start', { run_id: e.runId, step_id: e.stepId, attempt: e.attempt }),
  )
  engine.on('step:end', (e) =>
    events.emit('workflow.step.end', {
      run_id: e.runId,
      step_id: e.stepId,
      status: e.status,
      error: e.error,
    }),
  )
  engine.on('delivery:error', (e) =>
    events.emit('workflow.delivery.failed', {
      run_id: e.runId,
      workflow: e.workflowName,
      step_id: e.stepId ?? null,
      target: e.target,
      error: workflowDeliveryReason(e.error),
    }),
  )
  for (const [name, type] of [
    ['task:submit', 'background.task.submit'],
    ['task:start', 'background.task.start'],
    ['task:end', 'background.task.end'],
  ] as const)
    background.on(name, (task) => events.emit(type, { task_id: task.id, status: task.status }))
}
