import type { RunStatus, StepStatus } from './model.js'

/** Events a `WorkflowEngine` emits, with their payloads. Listeners run synchronously; payloads carry no results. */
export interface WorkflowEvents {
  /** A run began (`resumed: true` when this engine took it over after a crash or stop). */
  'run:start': { readonly runId: string; readonly workflowName: string; readonly resumed: boolean }
  /** A run ended and was recorded (after its deliveries were attempted). */
  'run:end': {
    readonly runId: string
    readonly workflowName: string
    readonly status: RunStatus
    readonly error: string | null
  }
  /** A step attempt began; its rendered input is stored. */
  'step:start': { readonly runId: string; readonly stepId: string; readonly attempt: number }
  /**
   * A step reached `completed`, `failed`, `skipped` (by its own `when` gate; its dependents skipped
   * with it emit nothing) or (when its run was cancelled) `cancelled`.
   */
  'step:end': {
    readonly runId: string
    readonly stepId: string
    readonly status: StepStatus
    readonly attempt: number
    readonly error: string | null
  }
  /** Something went wrong outside a step (a store write, a lost lease); the engine keeps running. */
  'run:error': { readonly runId?: string; readonly error: Error }
  /** A delivery failed (it is not retried); statuses are unaffected. */
  'delivery:error': {
    readonly runId: string
    readonly workflowName: string
    readonly stepId?: string
    readonly target: string
    readonly error: Error
  }
}

/** The name of a `WorkflowEvents` event. */
export type WorkflowEventName = keyof WorkflowEvents

/** A listener for one event. */
export type WorkflowListener<E extends WorkflowEventName> = (payload: WorkflowEvents[E]) => void

const NAMES: readonly WorkflowEventName[] = [
  'run:start',
  'run:end',
  'step:start',
  'step:end',
  'run:error',
  'delivery:error',
]

/** A minimal typed emitter; a throwing listener is reported and never breaks the engine. */
export class Emitter {
  readonly #listeners = new Map<WorkflowEventName, ReadonlyArray<(payload: never) => void>>(
    NAMES.map((name) => [name, []]),
  )
  readonly #onListenerError: (event: WorkflowEventName, error: unknown) => void

  constructor(onListenerError: (event: WorkflowEventName, error: unknown) => void) {
    this.#onListenerError = onListenerError
  }

  on<E extends WorkflowEventName>(event: E, listener: WorkflowListener<E>): () => void {
    const current = this.#listeners.get(event)
    if (current === undefined) throw new TypeError(`Unknown workflow event: ${String(event)}`)
    // Copy on write: emit iterates a snapshot, (un)subscribing inside a listener is safe.
    this.#listeners.set(event, [...current, listener as (payload: never) => void])
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      const list = this.#listeners.get(event) ?? []
      const index = list.indexOf(listener as (payload: never) => void)
      if (index >= 0) this.#listeners.set(event, [...list.slice(0, index), ...list.slice(index + 1)])
    }
  }

  emit<E extends WorkflowEventName>(event: E, payload: WorkflowEvents[E]): void {
    const listeners = this.#listeners.get(event) as ReadonlyArray<WorkflowListener<E>>
    for (let index = 0; index < listeners.length; index += 1) {
      try {
        ;(listeners[index] as WorkflowListener<E>)(payload)
      } catch (error) {
        this.#onListenerError(event, error)
      }
    }
  }
}
