import { describe, expect, it } from 'vitest'
import { MapIndex, SequenceIndex, type TaskIndex } from './task-index.js'

interface Item {
  readonly key: number
}

const item = (key: number): Item => ({ key })
const keysOf = (index: TaskIndex<Item>): number[] => [...index.values()].map((entry) => entry.key)

describe.each([
  ['SequenceIndex', () => new SequenceIndex<Item>()],
  ['MapIndex', () => new MapIndex<Item>()],
])('%s', (_name, make) => {
  it('adds, finds, deletes and lists in key order', () => {
    const index = make()
    const items = Array.from({ length: 10 }, (_, position) => item(position + 1))
    for (const entry of items) index.add(entry)
    expect(index.get(3)).toBe(items[2])
    index.delete(items[2] as Item)
    index.delete(items[0] as Item)
    expect(index.get(3)).toBeUndefined()
    expect(index.get(1)).toBeUndefined()
    expect(index.get(2)).toBe(items[1])
    expect(keysOf(index)).toEqual([2, 4, 5, 6, 7, 8, 9, 10])
    expect(index.get(11)).toBeUndefined()
    expect(index.get(0)).toBeUndefined()
  })

  it('stays correct under random churn against a Map', () => {
    const index = make()
    const reference = new Map<number, Item>()
    let next = 1
    let seed = 42
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let step = 0; step < 20_000; step += 1) {
      if (random() < 0.52 || reference.size === 0) {
        const entry = item(next)
        next += 1
        index.add(entry)
        reference.set(entry.key, entry)
      } else {
        // Mostly the oldest (tasks end roughly in order), sometimes any.
        const keys = [...reference.keys()]
        const victim = random() < 0.8 ? keys[0] : keys[Math.floor(random() * keys.length)]
        index.delete(reference.get(victim as number) as Item)
        reference.delete(victim as number)
      }
      if (step % 997 === 0) expect(keysOf(index)).toEqual([...reference.keys()])
    }
    for (let key = 0; key <= next; key += 1) expect(index.get(key)).toBe(reference.get(key))
  })
})

describe('SequenceIndex', () => {
  it('moves a long-lived oldest record aside instead of keeping every slot after it', () => {
    const index = new SequenceIndex<Item>()
    const pinned = item(1)
    index.add(pinned)
    // A million tasks come and go while task 1 stays known.
    for (let key = 2; key <= 1_000_000; key += 1) {
      const entry = item(key)
      index.add(entry)
      index.delete(entry)
    }
    expect(index.get(1)).toBe(pinned)
    expect(keysOf(index)).toEqual([1])
    expect(index.windowSize).toBeLessThanOrEqual(1024)
    const late = item(1_000_001)
    index.add(late)
    expect(index.get(1_000_001)).toBe(late)
    expect(keysOf(index)).toEqual([1, 1_000_001])
    index.delete(pinned)
    expect(index.get(1)).toBeUndefined()
    expect(keysOf(index)).toEqual([1_000_001])
  })

  it('leaves an empty slot for a skipped key and rejects keys that go back', () => {
    const index = new SequenceIndex<Item>()
    index.add(item(1))
    index.add(item(5))
    expect(index.get(5)?.key).toBe(5)
    expect(index.get(3)).toBeUndefined()
    expect(() => index.add(item(5))).toThrow(RangeError)
    expect(() => index.add(item(2))).toThrow(RangeError)
  })

  it('finds nothing for keys that are not sequence numbers', () => {
    const index = new SequenceIndex<Item>()
    index.add(item(1))
    expect(index.get('1')).toBeUndefined()
    expect(index.get(1.5)).toBeUndefined()
    expect(index.get(Number.NaN)).toBeUndefined()
  })
})
