import * as v from 'valibot'
import {
  assertDeliverable,
  type DeliveryTargetCheck,
  deliversBeyond,
  resolveDeliveryTargets,
} from './delivery.js'
import { ID_MAX_LENGTH, isoTime } from './format.js'
import { refuseUnknownKeys } from './option-keys.js'
import {
  lookUpSpend,
  type RunSpendLookup,
  SPEND_UNAVAILABLE,
  spendFields,
  spendOf,
  spendOutputEntries,
  usageUnavailableEntry,
} from './run-spend.js'
import { type AnyTool, creatorOf, defineTool, nestingOf } from './tool.js'

/** Task statuses, as `@lango/background` names them. */
const TASK_STATUS_VALUES = ['pending', 'running', 'done', 'failed', 'cancelled'] as const

/** A task as `@lango/background`'s `BackgroundManager.snapshot` returns it. */
export interface BackgroundTaskView {
  readonly id: string
  readonly status: (typeof TASK_STATUS_VALUES)[number]
  readonly prompt: string
  readonly result: string | undefined
  /** Tokens the agent reported for a `done` task, when it reported any. */
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | undefined
  readonly error: string | undefined
  readonly originChannel: string | undefined
  readonly createdAt: number
  readonly startedAt: number | undefined
  readonly completedAt: number | undefined
}

/** What the bg_* tools need; `BackgroundManager` from `@lango/background` fits as is. */
export interface BackgroundToolsService {
  submit(request: {
    prompt: string
    originChannel?: string
    originSession?: string
    creator?: string
    nesting?: number
  }): string
  snapshot(taskId: string): BackgroundTaskView
  list(options?: { status?: (typeof TASK_STATUS_VALUES)[number] }): readonly BackgroundTaskView[]
  result(taskId: string): { status: string; result: string }
  cancel(taskId: string): BackgroundTaskView
}

/** Options for {@link createBackgroundTools}. */
export interface BackgroundToolsOptions {
  readonly service: BackgroundToolsService
  /** Where notices go when neither `channel` nor the session names a chat. */
  readonly defaultChannel?: string
  /** Refuses a `channel` the notice could not reach (an unconfigured channel), before the task starts. */
  readonly checkTarget?: DeliveryTargetCheck
  /** Longest prompt accepted (default 100,000 characters). */
  readonly maxPromptLength?: number
  /** What tasks spent (model, cost), for `bg_result`; without it no model or cost is shown. */
  readonly spend?: RunSpendLookup
}

const checkBackgroundKeys = refuseUnknownKeys(
  'createBackgroundTools options',
  Object.keys({
    service: true,
    defaultChannel: true,
    checkTarget: true,
    maxPromptLength: true,
    spend: true,
  } satisfies Record<keyof BackgroundToolsOptions, true>),
)

const taskId = v.pipe(
  v.string('task_id must be a string'),
  v.minLength(1, 'task_id must not be empty'),
  v.maxLength(ID_MAX_LENGTH),
  v.description('The task id, as bg_submit returned it (also listed by bg_list).'),
)

/** A task as the bg_* tools show it (`bg_status`, `bg_list`'s `tasks`). */
const taskOutput = v.strictObject({
  task_id: v.string(),
  status: v.picklist(TASK_STATUS_VALUES),
  prompt: v.string(),
  result: v.nullable(v.string()),
  input_tokens: v.nullable(v.number()),
  output_tokens: v.nullable(v.number()),
  error: v.nullable(v.string()),
  origin_channel: v.nullable(v.string()),
  created_at: v.nullable(v.string()),
  started_at: v.nullable(v.string()),
  completed_at: v.nullable(v.string()),
})

function view(task: BackgroundTaskView): v.InferOutput<typeof taskOutput> {
  return {
    task_id: task.id,
    status: task.status,
    prompt: task.prompt,
    result: task.result ?? null,
    input_tokens: task.usage?.inputTokens ?? null,
    output_tokens: task.usage?.outputTokens ?? null,
    error: task.error ?? null,
    origin_channel: task.originChannel ?? null,
    created_at: isoTime(task.createdAt),
    started_at: isoTime(task.startedAt),
    completed_at: isoTime(task.completedAt),
  }
}

/** The five background tools of the contract: `bg_submit`, `bg_status`, `bg_list`, `bg_result`, `bg_cancel`. */
export function createBackgroundTools(options: BackgroundToolsOptions): AnyTool[] {
  checkBackgroundKeys(options)
  const { service } = options
  const maxPrompt = options.maxPromptLength ?? 100_000
  const fallback = options.defaultChannel === undefined ? [] : [options.defaultChannel]
  // The session each call comes from (its preflight): a chat's call that announces to another
  // chat needs approval (deliversBeyond).
  const sessions = new WeakMap<object, string | undefined>()

  return [
    defineTool({
      name: 'bg_submit',
      title: 'Submit background task',
      openWorld: true,
      description:
        'Run a prompt as a background agent task and return its task_id immediately; the result is announced on the channel when it finishes. channel is optional: it is auto-detected from the current conversation.',
      safety: 'moderate',
      safetyFor: (params) =>
        params.channel !== undefined && deliversBeyond([params.channel], sessions.get(params), fallback)
          ? 'dangerous'
          : 'moderate',
      worstSafety: 'dangerous',
      preflight(params, context) {
        if (params.channel !== undefined) assertDeliverable([params.channel], options.checkTarget, 'channel')
        sessions.set(params, context.sessionKey)
        return undefined
      },
      parameters: v.strictObject({
        prompt: v.pipe(
          v.string('prompt must be a string'),
          v.minLength(1, 'prompt must not be empty'),
          v.maxLength(maxPrompt),
          v.description(
            `What the background agent should do, written as an instruction to it (at most ${maxPrompt} characters); it does not see this conversation, so include everything it needs.`,
          ),
        ),
        channel: v.optional(
          v.pipe(
            v.string(),
            v.minLength(1),
            v.maxLength(256),
            v.description(
              'Where the result is announced: telegram:<chat id>, slack:<channel>, discord:<channel> or webhook. Optional: omitted, the current conversation is used.',
            ),
          ),
        ),
      }),
      output: v.strictObject({ status: v.literal('submitted'), task_id: v.string(), message: v.string() }),
      async handler(params, context) {
        const [channel] = resolveDeliveryTargets(
          params.channel === undefined ? undefined : [params.channel],
          context.sessionKey,
          fallback,
        )
        const id = service.submit({
          prompt: params.prompt,
          ...(channel === undefined ? {} : { originChannel: channel }),
          ...(context.sessionKey === undefined ? {} : { originSession: context.sessionKey }),
          ...creatorOf(context),
          nesting: nestingOf(context),
        })
        return {
          status: 'submitted' as const,
          task_id: id,
          message: `Background task ${id} submitted${channel === undefined ? '' : `; its result will be sent to ${channel}`}.`,
        }
      },
    }),
    defineTool({
      name: 'bg_status',
      title: 'Background task status',
      description: 'The current state of a background task: status, prompt, result or error, and timing.',
      safety: 'safe',
      parameters: v.strictObject({ task_id: taskId }),
      output: taskOutput,
      async handler(params) {
        return view(service.snapshot(params.task_id))
      },
    }),
    defineTool({
      name: 'bg_list',
      title: 'List background tasks',
      description: 'Background tasks, newest first, optionally only those with a given status.',
      safety: 'safe',
      parameters: v.strictObject({
        status: v.optional(
          v.pipe(
            v.picklist(TASK_STATUS_VALUES),
            v.description(
              'Only tasks in this state: pending (queued), running, done, failed or cancelled. Default: all.',
            ),
          ),
        ),
      }),
      output: v.strictObject({ tasks: v.array(taskOutput), count: v.number() }),
      async handler(params) {
        const tasks = service.list(params.status === undefined ? {} : { status: params.status }).map(view)
        return { tasks, count: tasks.length }
      },
    }),
    defineTool({
      name: 'bg_result',
      title: 'Background task result',
      description:
        'The result text of a finished (done) background task; an error names the status otherwise.',
      safety: 'safe',
      parameters: v.strictObject({ task_id: taskId }),
      output: v.strictObject({
        task_id: v.string(),
        status: v.string(),
        result: v.string(),
        input_tokens: v.nullable(v.number()),
        output_tokens: v.nullable(v.number()),
        ...spendOutputEntries,
        ...usageUnavailableEntry,
      }),
      async handler(params) {
        const result = service.result(params.task_id)
        const { usage } = service.snapshot(params.task_id)
        const spends =
          options.spend === undefined ? undefined : await lookUpSpend(options.spend, [params.task_id])
        const unavailable = spends === SPEND_UNAVAILABLE
        const spend = spends === undefined || unavailable ? undefined : spendOf(spends, params.task_id)
        return {
          task_id: params.task_id,
          status: result.status,
          result: result.result,
          input_tokens: usage?.inputTokens ?? spend?.inputTokens ?? null,
          output_tokens: usage?.outputTokens ?? spend?.outputTokens ?? null,
          ...(spends === undefined ? {} : spendFields(spend)),
          ...(unavailable ? { usage_unavailable: true as const } : {}),
        }
      },
    }),
    defineTool({
      name: 'bg_cancel',
      title: 'Cancel background task',
      idempotent: true,
      description: 'Cancel a pending or running background task.',
      safety: 'moderate',
      parameters: v.strictObject({ task_id: taskId }),
      output: v.strictObject({ status: v.picklist(TASK_STATUS_VALUES), task_id: v.string() }),
      async handler(params) {
        const task = service.cancel(params.task_id)
        return { status: task.status, task_id: task.id }
      },
    }),
  ]
}
