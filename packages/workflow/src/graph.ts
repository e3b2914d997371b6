/**
 * The step graph in compressed-sparse-row form (index arrays, no per-step objects), built with one
 * Kahn pass over a Map of ids. See docs/decisions/0005-workflow-engine.md: a graph library cost 25–30× more on 10 000 steps.
 * Dependencies on unknown ids, on the step itself, and repeats are ignored here; the validator
 * reports them.
 */
export interface StepGraph {
  readonly ids: readonly string[]
  readonly indexOf: ReadonlyMap<string, number>
  /** Step `i` depends on `dependencyList[dependencyStart[i] … dependencyStart[i + 1])`. */
  readonly dependencyStart: Int32Array
  readonly dependencyList: Int32Array
  /** Steps that depend on `i`: `dependentList[dependentStart[i] … dependentStart[i + 1])`, in file order. */
  readonly dependentStart: Int32Array
  readonly dependentList: Int32Array
  /** Topological order of indices; shorter than `ids` when there are cycles. */
  readonly order: Int32Array
  /** Position of each step in `order` (-1 for steps on or behind a cycle). */
  readonly position: Int32Array
  /** 0-based layer: one below the deepest dependency. */
  readonly depth: Int32Array
  /** Steps on the longest chain from this step to a sink, itself included (ready-queue priority). */
  readonly height: Int32Array
  /** Each cycle found, as ids in dependency order with the first repeated at the end. */
  readonly cycles: readonly (readonly string[])[]
  /** How many dependency names were unknown ids or the step itself (skipped). */
  readonly unresolved: number
}

/** Builds the graph for steps `ids` whose `dependsOn[i]` lists step ids (`knownIndex`: id → first index, if already built). */
export function buildGraph(
  ids: readonly string[],
  dependsOn: readonly (readonly string[])[],
  knownIndex?: ReadonlyMap<string, number>,
): StepGraph {
  const count = ids.length
  let indexOf = knownIndex
  if (indexOf === undefined) {
    const built = new Map<string, number>()
    for (let index = 0; index < count; index += 1) {
      const id = ids[index] as string
      if (!built.has(id)) built.set(id, index)
    }
    indexOf = built
  }
  let total = 0
  for (let index = 0; index < count; index += 1) total += (dependsOn[index] as readonly string[]).length
  const dependencyStart = new Int32Array(count + 1)
  const resolved = new Int32Array(total)
  const outdegree = new Int32Array(count)
  let used = 0
  let unresolved = 0
  for (let index = 0; index < count; index += 1) {
    const start = used
    for (const name of dependsOn[index] as readonly string[]) {
      const dependency = indexOf.get(name)
      if (dependency === undefined || dependency === index) {
        unresolved += 1
        continue
      }
      let repeated = false
      for (let at = start; at < used; at += 1) if (resolved[at] === dependency) repeated = true
      if (repeated) continue
      resolved[used] = dependency
      used += 1
      outdegree[dependency] = (outdegree[dependency] as number) + 1
    }
    dependencyStart[index + 1] = used
  }
  const dependencyList = resolved.subarray(0, used)
  const dependentStart = new Int32Array(count + 1)
  for (let index = 0; index < count; index += 1)
    dependentStart[index + 1] = (dependentStart[index] as number) + (outdegree[index] as number)
  const dependentList = new Int32Array(used)
  const fill = dependentStart.slice(0, count)
  const indegree = new Int32Array(count)
  for (let index = 0; index < count; index += 1) {
    const end = dependencyStart[index + 1] as number
    indegree[index] = end - (dependencyStart[index] as number)
    for (let at = dependencyStart[index] as number; at < end; at += 1) {
      const dependency = dependencyList[at] as number
      dependentList[fill[dependency] as number] = index
      fill[dependency] = (fill[dependency] as number) + 1
    }
  }

  // Kahn: `order` doubles as the queue.
  const order = new Int32Array(count)
  let tail = 0
  for (let index = 0; index < count; index += 1) if (indegree[index] === 0) order[tail++] = index
  const depth = new Int32Array(count)
  for (let head = 0; head < tail; head += 1) {
    const index = order[head] as number
    const nextDepth = (depth[index] as number) + 1
    const end = dependentStart[index + 1] as number
    for (let at = dependentStart[index] as number; at < end; at += 1) {
      const dependent = dependentList[at] as number
      if ((depth[dependent] as number) < nextDepth) depth[dependent] = nextDepth
      const left = (indegree[dependent] as number) - 1
      indegree[dependent] = left
      if (left === 0) order[tail++] = dependent
    }
  }
  const sorted = order.subarray(0, tail)
  const position = new Int32Array(count).fill(-1)
  for (let at = 0; at < tail; at += 1) position[sorted[at] as number] = at
  const height = new Int32Array(count)
  for (let at = tail - 1; at >= 0; at -= 1) {
    const index = sorted[at] as number
    let best = 0
    const end = dependentStart[index + 1] as number
    for (let cursor = dependentStart[index] as number; cursor < end; cursor += 1) {
      const candidate = height[dependentList[cursor] as number] as number
      if (candidate > best) best = candidate
    }
    height[index] = best + 1
  }
  const graph = {
    ids,
    indexOf,
    dependencyStart,
    dependencyList,
    dependentStart,
    dependentList,
    order: sorted,
    position,
    depth,
    height,
    unresolved,
  }
  return { ...graph, cycles: tail === count ? [] : findCycles(graph, indegree) }
}

/**
 * After Kahn, every node left with indegree > 0 has a leftover dependency, so walking leftover
 * dependencies must repeat a node: that closes a cycle. Iterative, each node walked once.
 */
function findCycles(graph: Omit<StepGraph, 'cycles'>, indegree: Int32Array): string[][] {
  const { ids, dependencyStart, dependencyList } = graph
  const cycles: string[][] = []
  const walked = new Int32Array(ids.length) // 0 = not yet, otherwise the walk number
  let walk = 0
  for (let start = 0; start < ids.length; start += 1) {
    if ((indegree[start] as number) === 0 || walked[start] !== 0) continue
    walk += 1
    const path: number[] = []
    let node = start
    while (node !== -1 && walked[node] === 0) {
      walked[node] = walk
      path.push(node)
      let next = -1
      const end = dependencyStart[node + 1] as number
      for (let at = dependencyStart[node] as number; at < end; at += 1) {
        if ((indegree[dependencyList[at] as number] as number) > 0) {
          next = dependencyList[at] as number
          break
        }
      }
      node = next
    }
    if (node === -1 || walked[node] !== walk) continue
    const cycle = path.slice(path.indexOf(node)).reverse()
    // Rotate so the cycle starts at the step written first, for a stable message.
    const first = cycle.indexOf(Math.min(...cycle))
    const rotated = [...cycle.slice(first), ...cycle.slice(0, first)]
    cycles.push([...rotated, rotated[0] as number].map((index) => ids[index] as string))
  }
  return cycles
}

/** Whether `step` directly depends on `dependency`. */
export function dependsDirectly(graph: StepGraph, step: number, dependency: number): boolean {
  const end = graph.dependencyStart[step + 1] as number
  for (let at = graph.dependencyStart[step] as number; at < end; at += 1)
    if (graph.dependencyList[at] === dependency) return true
  return false
}

/**
 * Returns whether `ancestor` is reachable from `step` through dependencies. Searches backwards from
 * `step`, pruning steps that come before `ancestor` in topological order.
 */
export function isAncestor(
  graph: StepGraph,
  ancestor: number,
  step: number,
  visited: Int32Array,
  stamp: number,
): boolean {
  if (dependsDirectly(graph, step, ancestor)) return true
  const { dependencyStart, dependencyList, position } = graph
  const floor = position[ancestor] as number
  const stack = [step]
  visited[step] = stamp
  while (stack.length > 0) {
    const node = stack.pop() as number
    const end = dependencyStart[node + 1] as number
    for (let at = dependencyStart[node] as number; at < end; at += 1) {
      const next = dependencyList[at] as number
      if (next === ancestor) return true
      if (visited[next] === stamp) continue
      visited[next] = stamp
      // Nothing earlier than `ancestor` in topological order can have it as an ancestor.
      if (floor >= 0 && (position[next] as number) >= 0 && (position[next] as number) < floor) continue
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
    let layer = layers[depth]
    if (layer === undefined) {
      layer = []
      layers[depth] = layer
    }
    layer.push(graph.ids[index] as string)
  }
  return layers
}
