/**
 * The step graph, built with one Kahn pass over a Map of ids: per-step lists of dependencies and
 * dependents, a topological order, layers and heights. No graph library and no recursion (WF-7);
 * see docs/decisions/0005-workflow-engine.md §1. Dependencies on unknown ids, on the step itself,
 * and repeats are left out here; the validator reports them.
 */
export interface StepGraph {
  readonly ids: readonly string[]
  readonly indexOf: ReadonlyMap<string, number>
  /** Each step's dependencies (indices, each once, in the order written). */
  readonly dependencies: readonly (readonly number[])[]
  /** Each step's dependents (indices, in file order). */
  readonly dependents: readonly (readonly number[])[]
  /** Topological order of indices, ties in file order; shorter than `ids` when there are cycles. */
  readonly order: readonly number[]
  /** Position of each step in `order` (-1 for steps on or behind a cycle). */
  readonly position: readonly number[]
  /** 0-based layer: one below the deepest dependency. */
  readonly depth: readonly number[]
  /** Steps on the longest chain from this step to a sink, itself included (ready-queue priority). */
  readonly height: readonly number[]
  /** Each cycle found, as ids in dependency order with the first repeated at the end. */
  readonly cycles: readonly (readonly string[])[]
  /** How many dependency names were unknown ids or the step itself (left out). */
  readonly unresolved: number
}

/** Builds the graph of steps `ids` whose `dependsOn[i]` lists step ids. The first of duplicate ids wins. */
export function buildGraph(ids: readonly string[], dependsOn: readonly (readonly string[])[]): StepGraph {
  const count = ids.length
  const indexOf = new Map<string, number>()
  ids.forEach((id, index) => {
    if (!indexOf.has(id)) indexOf.set(id, index)
  })
  const dependencies: number[][] = []
  const dependents: number[][] = ids.map(() => [])
  let unresolved = 0
  for (let index = 0; index < count; index += 1) {
    const resolved: number[] = []
    for (const name of dependsOn[index] ?? []) {
      const dependency = indexOf.get(name)
      if (dependency === undefined || dependency === index) unresolved += 1
      else if (!resolved.includes(dependency)) resolved.push(dependency)
    }
    dependencies.push(resolved)
  }
  // Filled in index order, so each dependents list is in file order.
  dependencies.forEach((list, index) => {
    for (const dependency of list) dependents[dependency]?.push(index)
  })

  // Kahn's algorithm; `order` doubles as the queue.
  const indegree = dependencies.map((list) => list.length)
  const depth: number[] = new Array(count).fill(0)
  const order: number[] = []
  for (let index = 0; index < count; index += 1) if (indegree[index] === 0) order.push(index)
  for (let head = 0; head < order.length; head += 1) {
    const index = order[head] as number
    for (const dependent of dependents[index] as number[]) {
      depth[dependent] = Math.max(depth[dependent] as number, (depth[index] as number) + 1)
      indegree[dependent] = (indegree[dependent] as number) - 1
      if (indegree[dependent] === 0) order.push(dependent)
    }
  }
  const position: number[] = new Array(count).fill(-1)
  order.forEach((index, at) => {
    position[index] = at
  })
  const height: number[] = new Array(count).fill(0)
  for (let at = order.length - 1; at >= 0; at -= 1) {
    const index = order[at] as number
    let below = 0
    for (const dependent of dependents[index] as number[])
      below = Math.max(below, height[dependent] as number)
    height[index] = below + 1
  }
  const cycles = order.length === count ? [] : findCycles(ids, dependencies, indegree)
  return { ids, indexOf, dependencies, dependents, order, position, depth, height, cycles, unresolved }
}

/**
 * After Kahn, every step left with indegree > 0 has a leftover dependency, so walking leftover
 * dependencies must repeat a step: that closes a cycle. Iterative, each step walked once.
 */
function findCycles(
  ids: readonly string[],
  dependencies: readonly (readonly number[])[],
  indegree: readonly number[],
): string[][] {
  const cycles: string[][] = []
  const walkOf = new Map<number, number>()
  for (let start = 0; start < ids.length; start += 1) {
    if (indegree[start] === 0 || walkOf.has(start)) continue
    const path: number[] = []
    let node: number | undefined = start
    while (node !== undefined && !walkOf.has(node)) {
      walkOf.set(node, start)
      path.push(node)
      node = dependencies[node]?.find((dependency) => (indegree[dependency] as number) > 0)
    }
    if (node === undefined || walkOf.get(node) !== start) continue
    const cycle = path.slice(path.indexOf(node)).reverse()
    // Rotate so the cycle starts at the step written first, for a stable message.
    const first = cycle.indexOf(Math.min(...cycle))
    const rotated = [...cycle.slice(first), ...cycle.slice(0, first)]
    cycles.push([...rotated, rotated[0] as number].map((index) => ids[index] as string))
  }
  return cycles
}

/**
 * Whether `ancestor` is reachable from `step` through dependencies. Searches backwards from `step`
 * with an explicit stack, pruning steps that come before `ancestor` in topological order.
 */
export function isAncestor(graph: StepGraph, ancestor: number, step: number): boolean {
  const { dependencies, position } = graph
  const floor = position[ancestor] as number
  const visited = new Set<number>([step])
  const stack = [step]
  while (stack.length > 0) {
    for (const next of dependencies[stack.pop() as number] as readonly number[]) {
      if (next === ancestor) return true
      if (visited.has(next)) continue
      visited.add(next)
      // Nothing earlier than `ancestor` in topological order can have it as an ancestor.
      const at = position[next] as number
      if (floor >= 0 && at >= 0 && at < floor) continue
      stack.push(next)
    }
  }
  return false
}

/** Groups step ids by depth (topological layers), for display. */
export function layersOf(graph: StepGraph): string[][] {
  const layers: string[][] = []
  for (const index of graph.order) {
    const depth = graph.depth[index] as number
    const layer = layers[depth] ?? []
    layers[depth] = layer
    layer.push(graph.ids[index] as string)
  }
  return layers
}
