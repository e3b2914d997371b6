/**
 * Type-level proof that the agent runner fits the `AgentRunner` port of `@lango/cron`,
 * `@lango/background` and `@lango/workflow` as it is (ADR 0006), checked by `tsc --noEmit`.
 *
 * Method parameters are bivariant in TypeScript, so plain assignability would accept a runner that
 * demands more than a package sends. `AsFunction` re-declares a method as a function type, whose
 * parameters are checked contravariantly; the `@ts-expect-error` lines show the check rejects a
 * runner that needs a field a package does not send.
 */
import type {
  AgentRunFailure as BackgroundAgentRunFailure,
  AgentRunner as BackgroundAgentRunner,
} from '@lango/background'
import type { AgentRunFailure as CronAgentRunFailure, AgentRunner as CronAgentRunner } from '@lango/cron'
import type {
  AgentRunFailure as WorkflowAgentRunFailure,
  AgentRunner as WorkflowAgentRunner,
} from '@lango/workflow'
import { expectTypeOf } from 'vitest'
import {
  type AgentError,
  type AgentRunner,
  type AgentTurnResult,
  createAgentRunner,
} from '../src/agent/index.js'

type AsFunction<Method> = Method extends (...args: infer Args) => infer Result
  ? (...args: Args) => Result
  : never
type Fits<Source, Target> = [Source] extends [Target] ? true : false
declare function expectTrue<T extends true>(): T
declare function expectFalse<T extends false>(): T

const runner: AgentRunner = createAgentRunner({ baseUrl: 'http://127.0.0.1:11434/v1', model: 'qwen3:8b' })

// Assigned to each port, with no cast.
const forCron: CronAgentRunner = runner
const forBackground: BackgroundAgentRunner = runner
const forWorkflow: WorkflowAgentRunner = runner
void forCron
void forBackground
void forWorkflow

// Strictly, method by method.
expectTrue<Fits<AsFunction<AgentRunner['run']>, AsFunction<CronAgentRunner['run']>>>()
expectTrue<Fits<AsFunction<AgentRunner['run']>, AsFunction<BackgroundAgentRunner['run']>>>()
expectTrue<Fits<AsFunction<AgentRunner['run']>, AsFunction<WorkflowAgentRunner['run']>>>()

// The check has teeth: a runner that needs a `runId` fits cron and workflow, not background.
type NeedsRunId = (
  request: { readonly prompt: string; readonly sessionKey: string; readonly runId: string },
  options: { readonly signal: AbortSignal },
) => Promise<{ readonly text: string }>
expectTrue<Fits<NeedsRunId, AsFunction<CronAgentRunner['run']>>>()
expectFalse<Fits<NeedsRunId, AsFunction<BackgroundAgentRunner['run']>>>()
// @ts-expect-error a runner demanding `runId` is not a background runner
expectTrue<Fits<NeedsRunId, AsFunction<BackgroundAgentRunner['run']>>>()

// Who a run's spend counts against: every package sends the same optional `creator` (the per-creator
// daily budget covers cron jobs, background tasks and workflow runs alike), and the runner reads it.
type RequestOf<Runner extends { run(request: never, options: never): unknown }> = Parameters<Runner['run']>[0]
expectTypeOf<RequestOf<CronAgentRunner>['creator']>().toEqualTypeOf<string | undefined>()
expectTypeOf<RequestOf<BackgroundAgentRunner>['creator']>().toEqualTypeOf<string | undefined>()
expectTypeOf<RequestOf<WorkflowAgentRunner>['creator']>().toEqualTypeOf<string | undefined>()
expectTypeOf<RequestOf<AgentRunner>['creator']>().toEqualTypeOf<string | undefined>()
// Cron names the job by its id too (its daily spend is keyed by it, so a rename keeps it).
expectTypeOf<RequestOf<CronAgentRunner>['jobId']>().toEqualTypeOf<string>()
expectTrue<Fits<RequestOf<CronAgentRunner>['jobId'], RequestOf<AgentRunner>['jobId']>>()
// A runner that would need a creator fits none: a host-made cron job or an operator's task has none.
type NeedsCreator = (
  request: { readonly prompt: string; readonly sessionKey: string; readonly creator: string },
  options: { readonly signal: AbortSignal },
) => Promise<{ readonly text: string }>
expectFalse<Fits<NeedsCreator, AsFunction<CronAgentRunner['run']>>>()
expectFalse<Fits<NeedsCreator, AsFunction<BackgroundAgentRunner['run']>>>()
expectFalse<Fits<NeedsCreator, AsFunction<WorkflowAgentRunner['run']>>>()

// The usage every port reads (cron stores it and its AI token budget counts it) is the runner's.
type PortUsage<Runner extends { run(...args: never[]): Promise<{ readonly usage?: unknown }> }> = NonNullable<
  Awaited<ReturnType<Runner['run']>>['usage']
>
expectTrue<Fits<AgentTurnResult['usage'], PortUsage<CronAgentRunner>>>()
expectTrue<Fits<AgentTurnResult['usage'], PortUsage<BackgroundAgentRunner>>>()
expectTrue<Fits<AgentTurnResult['usage'], PortUsage<WorkflowAgentRunner>>>()
expectTypeOf<PortUsage<CronAgentRunner>>().toEqualTypeOf<PortUsage<BackgroundAgentRunner>>()
expectTypeOf<PortUsage<CronAgentRunner>>().toEqualTypeOf<PortUsage<WorkflowAgentRunner>>()

// What the ports read is on the result.
expectTypeOf<Awaited<ReturnType<AgentRunner['run']>>>().toEqualTypeOf<AgentTurnResult>()
expectTypeOf<AgentTurnResult['text']>().toEqualTypeOf<string>()
expectTypeOf<AgentTurnResult['usage']>().toMatchTypeOf<{
  readonly inputTokens: number
  readonly outputTokens: number
}>()
expectTypeOf(runner.chat).returns.resolves.toEqualTypeOf<AgentTurnResult>()
expectTypeOf(runner.observe).returns.resolves.toEqualTypeOf<string>()

// What a rejection says (what a failed turn spent, whether trying again can help) has one shape in
// every package, and the runner's error is it: cron counts the usage, workflow stops retrying.
expectTypeOf<CronAgentRunFailure>().toEqualTypeOf<WorkflowAgentRunFailure>()
expectTypeOf<CronAgentRunFailure>().toEqualTypeOf<BackgroundAgentRunFailure>()
const failure = {} as AgentError
const asCron: CronAgentRunFailure = failure
const asWorkflow: WorkflowAgentRunFailure = failure
const asBackground: BackgroundAgentRunFailure = failure
void asCron
void asWorkflow
void asBackground
expectTypeOf<AgentError['usage']>().toEqualTypeOf<CronAgentRunFailure['usage']>()
expectTypeOf<AgentError['retryable']>().toEqualTypeOf<boolean>()
// The check has teeth: a failure whose usage is text, or whose retryable is a word, fits none.
expectFalse<Fits<{ readonly usage: string }, CronAgentRunFailure>>()
expectFalse<Fits<{ readonly retryable: 'no' }, WorkflowAgentRunFailure>>()
