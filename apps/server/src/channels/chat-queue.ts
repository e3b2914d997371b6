interface ChatLane {
  tail: Promise<void>
  /** Tasks accepted and not yet settled, the running one included. */
  size: number
}

/**
 * Runs tasks one at a time per key (a chat), in arrival order, with a bound on what may wait: at
 * most `maxWaitingPerKey` behind the running task of a key, and at most `maxKeys` keys with work at
 * once. A lane disappears when its last task settles, so memory follows the work, not the history.
 */
export class ChatQueue {
  readonly #lanes = new Map<string, ChatLane>()
  readonly #maxWaitingPerKey: number
  readonly #maxKeys: number

  constructor(options: { readonly maxWaitingPerKey: number; readonly maxKeys: number }) {
    this.#maxWaitingPerKey = options.maxWaitingPerKey
    this.#maxKeys = options.maxKeys
  }

  /** Keys with work queued or running. */
  get size(): number {
    return this.#lanes.size
  }

  /** Queues `task` behind the key's earlier tasks; undefined (and `task` never runs) when the bounds are reached. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> | undefined {
    let lane = this.#lanes.get(key)
    if (lane === undefined) {
      if (this.#lanes.size >= this.#maxKeys) return undefined
      lane = { tail: Promise.resolve(), size: 0 }
      this.#lanes.set(key, lane)
    } else if (lane.size > this.#maxWaitingPerKey) return undefined
    const current = lane
    current.size += 1
    const result = current.tail.then(task)
    current.tail = result.then(
      () => this.#settled(key, current),
      () => this.#settled(key, current),
    )
    return result
  }

  #settled(key: string, lane: ChatLane): void {
    lane.size -= 1
    if (lane.size === 0 && this.#lanes.get(key) === lane) this.#lanes.delete(key)
  }
}
