import { describe, expect, it } from 'vitest'
import { buildGraph, isAncestor, layersOf } from './graph.js'
import { ReadyQueue } from './ready-queue.js'

describe('buildGraph', () => {
  it('orders, layers and measures heights with one Kahn pass', () => {
    const graph = buildGraph(['a', 'b', 'c', 'd', 'e'], [[], ['a'], ['a'], ['b', 'c'], []])
    expect(graph.order.map((index) => graph.ids[index])).toEqual(['a', 'e', 'b', 'c', 'd'])
    expect(layersOf(graph)).toEqual([['a', 'e'], ['b', 'c'], ['d']])
    expect(graph.height).toEqual([3, 2, 2, 1, 1])
    expect(graph.dependents).toEqual([[1, 2], [3], [3], [], []])
    expect(graph.cycles).toEqual([])
  })

  it('finds ancestors through several levels, and not siblings', () => {
    const graph = buildGraph(['a', 'b', 'c', 'd'], [[], ['a'], ['b'], ['a']])
    expect(isAncestor(graph, 0, 2)).toBe(true)
    expect(isAncestor(graph, 3, 2)).toBe(false)
    expect(isAncestor(graph, 2, 0)).toBe(false)
  })

  it('drops unknown, self and repeated dependencies, counting the unresolved ones', () => {
    const graph = buildGraph(
      ['a', 'b'],
      [
        ['a', 'zz'],
        ['a', 'a'],
      ],
    )
    expect(graph.dependencies).toEqual([[], [0]])
    expect(graph.unresolved).toBe(2)
  })

  it('handles chains and cycles far beyond the step cap without recursion', () => {
    const count = 10_000
    const ids = Array.from({ length: count }, (_, index) => `s${index}`)
    const deps = ids.map((_, index) =>
      [1, 2, 3].filter((offset) => index - offset * 7 >= 0).map((offset) => `s${index - offset * 7}`),
    )
    const chain = Array.from({ length: count }, (_, index) => (index === 0 ? [] : [`s${index - 1}`]))
    const graph = buildGraph(ids, deps)
    const deep = buildGraph(ids, chain)
    expect(graph.order.length).toBe(count)
    expect(deep.height[0]).toBe(count)
    const cyclic = buildGraph(
      ids,
      chain.map((list, index) => (index === 0 ? [`s${count - 1}`] : list)),
    )
    expect(cyclic.cycles[0]?.length).toBe(count + 1)
  })
})

describe('ReadyQueue', () => {
  it('pops the highest priority first, ties in file order', () => {
    const queue = new ReadyQueue([1, 5, 5, 3, 9])
    for (const index of [0, 1, 2, 3, 4]) queue.push(index)
    expect(Array.from({ length: 5 }, () => queue.pop())).toEqual([4, 1, 2, 3, 0])
    expect(queue.pop()).toBeUndefined()
  })
})
