import { describe, expect, it } from 'vitest'
import { formatDuration, parseDuration } from './duration.js'
import { WorkflowError } from './errors.js'
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

describe('durations', () => {
  it('parses units and combinations, rejects the rest', () => {
    expect(parseDuration('500ms')).toBe(500)
    expect(parseDuration('1.5s')).toBe(1500)
    expect(parseDuration('1h30m')).toBe(5_400_000)
    expect(parseDuration('2d')).toBe(172_800_000)
    for (const bad of ['', '30', '5 m', 'm', '-1s', '1y', 'x'.repeat(40)])
      expect(parseDuration(bad)).toBeUndefined()
    expect([
      formatDuration(200),
      formatDuration(1500),
      formatDuration(300_000),
      formatDuration(5_400_000),
    ]).toEqual(['200ms', '1.5s', '5m', '1.5h'])
  })
})

describe('WorkflowError', () => {
  it('is recognised across copies by its brand and serialises only code, message, data and issues', () => {
    const error = new WorkflowError('WORKFLOW_RUN_NOT_FOUND', 'No workflow run with this id', {
      data: { runId: 'r' },
      cause: new Error('inner'),
    })
    expect(WorkflowError.is(error)).toBe(true)
    expect(WorkflowError.is({ name: 'WorkflowError' })).toBe(false)
    expect(WorkflowError.is({ name: 'WorkflowError', [Symbol.for('lango.error')]: true })).toBe(true)
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      code: 'WORKFLOW_RUN_NOT_FOUND',
      message: 'No workflow run with this id',
      data: { runId: 'r' },
    })
  })
})
