import type { WorkflowStore } from '../../src/ports.js'

type Method = keyof WorkflowStore

/** A call held before it reaches the database, as a write stuck in the network would be. */
export interface HeldCall {
  /** Resolves when the call arrived and is being held. */
  readonly reached: Promise<void>
  /** Lets it through to the database. */
  release(): void
  /** What the database answered once released. */
  readonly result: Promise<unknown>
}

interface Gate {
  readonly method: Method
  readonly match: (args: readonly unknown[]) => boolean
  readonly arrived: () => void
  readonly released: Promise<void>
  readonly settle: (result: unknown) => void
}

/**
 * A {@link WorkflowStore} in front of a real one (the SQLite store under test) that can hold one
 * chosen call in flight, or fail every call as a database that stopped answering does.
 */
export class ControlledStore implements WorkflowStore {
  /** While true, every call rejects without reaching the database. */
  unreachable = false
  readonly #inner: WorkflowStore
  readonly #gates: Gate[] = []

  constructor(inner: WorkflowStore) {
    this.#inner = inner
  }

  /** Holds the next call of `method` whose arguments `match`, until released. */
  hold<M extends Method>(method: M, match: (args: Parameters<WorkflowStore[M]>) => boolean): HeldCall {
    let arrived!: () => void
    let release!: () => void
    let settle!: (result: unknown) => void
    const reached = new Promise<void>((resolve) => {
      arrived = resolve
    })
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const result = new Promise<unknown>((resolve) => {
      settle = resolve
    })
    this.#gates.push({
      method,
      match: match as (args: readonly unknown[]) => boolean,
      arrived,
      released,
      settle,
    })
    return { reached, release, result }
  }

  async #forward<M extends Method>(
    method: M,
    args: Parameters<WorkflowStore[M]>,
  ): Promise<Awaited<ReturnType<WorkflowStore[M]>>> {
    if (this.unreachable) throw new Error('database unreachable')
    const index = this.#gates.findIndex((gate) => gate.method === method && gate.match(args))
    const gate = index < 0 ? undefined : this.#gates.splice(index, 1)[0]
    if (gate !== undefined) {
      gate.arrived()
      await gate.released
    }
    const call = this.#inner[method] as (
      ...values: unknown[]
    ) => Promise<Awaited<ReturnType<WorkflowStore[M]>>>
    const result = await call.apply(this.#inner, args)
    gate?.settle(result)
    return result
  }

  insertRun(...args: Parameters<WorkflowStore['insertRun']>) {
    return this.#forward('insertRun', args)
  }
  updateStep(...args: Parameters<WorkflowStore['updateStep']>) {
    return this.#forward('updateStep', args)
  }
  updateSteps(...args: Parameters<WorkflowStore['updateSteps']>) {
    return this.#forward('updateSteps', args)
  }
  finishRun(...args: Parameters<WorkflowStore['finishRun']>) {
    return this.#forward('finishRun', args)
  }
  getRun(...args: Parameters<WorkflowStore['getRun']>) {
    return this.#forward('getRun', args)
  }
  listSteps(...args: Parameters<WorkflowStore['listSteps']>) {
    return this.#forward('listSteps', args)
  }
  listRuns(...args: Parameters<WorkflowStore['listRuns']>) {
    return this.#forward('listRuns', args)
  }
  heartbeat(...args: Parameters<WorkflowStore['heartbeat']>) {
    return this.#forward('heartbeat', args)
  }
  renewLeases(...args: Parameters<WorkflowStore['renewLeases']>) {
    return this.#forward('renewLeases', args)
  }
  releaseOwner(...args: Parameters<WorkflowStore['releaseOwner']>) {
    return this.#forward('releaseOwner', args)
  }
  claimRuns(...args: Parameters<WorkflowStore['claimRuns']>) {
    return this.#forward('claimRuns', args)
  }
  pruneRuns(...args: Parameters<WorkflowStore['pruneRuns']>) {
    return this.#forward('pruneRuns', args)
  }
}
