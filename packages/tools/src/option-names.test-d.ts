/**
 * Type-level proof of issue 22's "one of each": the same port or setting has the same option name
 * in cron, workflow and background — `agentRunner`, `channelSender`, `leaseMs` — so one object of
 * ports configures all three with no renaming and no cast, and each service subscribes with the same
 * `on(event, listener) => unsubscribe`. The deprecated former names (`runner`, `notifier`,
 * `ownerLeaseMs`) still type-check for one release. Checked by `tsc --noEmit`.
 */
import { BackgroundManager, type BackgroundManagerOptions } from '@lango/background'
import { type CronSchedulerOptions, CronService } from '@lango/cron'
import { type CronDatabase, SqliteCronStore } from '@lango/cron/sqlite'
import { WorkflowEngine, type WorkflowEngineOptions } from '@lango/workflow'
import { SqliteWorkflowStore, type WorkflowDatabase } from '@lango/workflow/sqlite'
import type { Kysely } from 'kysely'
import { expectTypeOf } from 'vitest'

type Fits<Source, Target> = [Source] extends [Target] ? true : false
declare function expectTrue<T extends true>(): T

declare const db: Kysely<CronDatabase & WorkflowDatabase>

// ── One object of ports for every service ────────────────────────────────────────────────────────

const agentRunner = {
  async run(
    request: { readonly prompt: string; readonly sessionKey: string },
    _options: { signal: AbortSignal },
  ) {
    return { text: `answer to ${request.sessionKey}` }
  },
}
const channelSender = {
  async send(_target: string, _text: string, options: { readonly signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
  },
}
const ports = { agentRunner, channelSender, leaseMs: 30_000 } as const

export function composeWithOneObject(): void {
  const cron = new CronService({ store: new SqliteCronStore(db), ...ports })
  const workflow = new WorkflowEngine({ store: new SqliteWorkflowStore(db), ...ports })
  // Background keeps its tasks in memory and has no lease; the extra key is ignored.
  const background = new BackgroundManager({ ...ports })
  void [cron, workflow, background]
}

// ── The names are the same keys, of the same port types ──────────────────────────────────────────

type SharedPorts = 'agentRunner' | 'channelSender'
expectTrue<Fits<SharedPorts, keyof CronSchedulerOptions>>()
expectTrue<Fits<SharedPorts, keyof WorkflowEngineOptions>>()
expectTrue<Fits<SharedPorts, keyof BackgroundManagerOptions>>()
expectTrue<Fits<'leaseMs', keyof CronSchedulerOptions>>()
expectTrue<Fits<'leaseMs', keyof WorkflowEngineOptions>>()
expectTypeOf<CronSchedulerOptions['leaseMs']>().toEqualTypeOf<WorkflowEngineOptions['leaseMs']>()

// One adapter object fits each package's option (structural typing; no package imports another).
expectTrue<Fits<typeof agentRunner, NonNullable<CronSchedulerOptions['agentRunner']>>>()
expectTrue<Fits<typeof agentRunner, NonNullable<WorkflowEngineOptions['agentRunner']>>>()
expectTrue<Fits<typeof agentRunner, NonNullable<BackgroundManagerOptions['agentRunner']>>>()
expectTrue<Fits<typeof channelSender, NonNullable<CronSchedulerOptions['channelSender']>>>()
expectTrue<Fits<typeof channelSender, NonNullable<WorkflowEngineOptions['channelSender']>>>()
expectTrue<Fits<typeof channelSender, NonNullable<BackgroundManagerOptions['channelSender']>>>()

// ── The former names: deprecated, still accepted ─────────────────────────────────────────────────

export function composeWithFormerNames(): void {
  const background = new BackgroundManager({ runner: agentRunner, notifier: channelSender })
  const workflow = new WorkflowEngine({ store: new SqliteWorkflowStore(db), ownerLeaseMs: 30_000 })
  void [background, workflow]
}

// Background still needs its two ports under one name or the other.
export function backgroundNeedsItsPorts(): void {
  // @ts-expect-error no agent runner under either name
  new BackgroundManager({ channelSender })
  // @ts-expect-error no channel port under either name
  new BackgroundManager({ agentRunner })
}

// ── One way to subscribe ─────────────────────────────────────────────────────────────────────────

declare const cron: CronService
declare const engine: WorkflowEngine
declare const manager: BackgroundManager
expectTypeOf(cron.on('run:end', () => {})).toEqualTypeOf<() => void>()
expectTypeOf(engine.on('run:end', () => {})).toEqualTypeOf<() => void>()
expectTypeOf(manager.on('task:end', () => {})).toEqualTypeOf<() => void>()
