import { describe, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { AGENT_WORKFLOW_LIMITS, TRUSTED_WORKFLOW_LIMITS, type WorkflowLimits } from './limits.js'
import { parseWorkflow } from './parse-workflow.js'
import { findSkippedKeys } from './schema.js'

/** A small deterministic PRNG (mulberry32), so failures reproduce. */
function random(seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let value = Math.imul(state ^ (state >>> 15), 1 | state)
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}

const VALUES: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1,
  2,
  1.5,
  17,
  1e9,
  Number.NaN,
  true,
  false,
  '',
  'x',
  'a'.repeat(65),
  'p'.repeat(16 * 1024 + 1),
  'bad id!',
  '-dash',
  'ok_id-1',
  '1h',
  '2h',
  '99h',
  '10s',
  '30',
  'telegram:1',
  'slack',
  'bad target',
  'Europe/Berlin',
  'Mars/Olympus',
  [],
  ['a'],
  ['a', 'b'],
  [1],
  ['telegram:1'],
  Array.from({ length: 33 }, (_, index) => `s${index}`),
  Array.from({ length: 17 }, () => 'telegram:1'),
  {},
  { attempts: 2 },
  { attempts: 2, backoff: '10s' },
  { attempts: 0 },
  { attempts: 2, extra: 1 },
  { attempts: 2, backoff: '2h' },
]
const ROOT_KEYS = [
  'name',
  'description',
  'schedule',
  'timezone',
  'deliver_to',
  'max_parallel',
  'steps',
  'extra',
  '<<',
  'constructor',
]
const STEP_KEYS = [
  'id',
  'prompt',
  'run',
  'agent',
  'depends_on',
  'timeout',
  'retry',
  'continue_on_error',
  'deliver_to',
  'when',
  'continue_on_skip',
  'dependson',
  'prototype',
]

function base(): Record<string, unknown> {
  return {
    name: 'daily',
    description: 'Morning summary',
    schedule: '0 9 * * *',
    timezone: 'UTC',
    deliver_to: ['telegram:1'],
    max_parallel: 4,
    steps: [
      { id: 'a', prompt: 'hello', agent: 'researcher', timeout: '5m' },
      {
        id: 'b',
        run: 'echo hi',
        depends_on: ['a'],
        retry: { attempts: 2, backoff: '10s' },
        continue_on_error: true,
        deliver_to: ['slack:C1'],
      },
    ],
  }
}

function set(target: Record<string, unknown>, key: string, value: unknown): void {
  if (value === undefined) delete target[key]
  // Like yaml's toJS: a `__proto__` key becomes an own property, never the prototype.
  else Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function mutate(next: () => number): unknown {
  const document = base()
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T
  const mutations = 1 + Math.floor(next() * 3)
  for (let count = 0; count < mutations; count += 1) {
    const steps = document.steps as Record<string, unknown>[]
    const where = next()
    if (where < 0.3) set(document, pick(ROOT_KEYS), pick(VALUES))
    else if (where < 0.85 && Array.isArray(steps)) {
      const step = steps[Math.floor(next() * steps.length)]
      if (typeof step === 'object' && step !== null) set(step, pick(STEP_KEYS), pick(VALUES))
    } else if (where < 0.95 && Array.isArray(steps))
      steps[Math.floor(next() * steps.length)] = pick(VALUES) as Record<string, unknown>
    else set(document, '__proto__', pick(VALUES))
  }
  return document
}

/** Values of VALUES that are not identifiers: they must never appear in an issue. */
const SECRET_LOOKING = ['Mars/Olympus', 'bad id!', 'bad target', 'p'.repeat(64)]

describe('the schema on mutated documents', () => {
  it('reports __proto__, constructor and prototype keys, which valibot skips', () => {
    const document = base()
    set(document, '__proto__', { polluted: true })
    expect(findSkippedKeys(document).map((issue) => issue.path)).toEqual(['__proto__'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  for (const [name, limits] of [
    ['agent limits', AGENT_WORKFLOW_LIMITS],
    ['trusted limits', TRUSTED_WORKFLOW_LIMITS],
  ] as Array<[string, WorkflowLimits]>) {
    it(`never throws, and never echoes a value, on 300 mutated documents (${name})`, () => {
      const next = random(name.length)
      expect(parseWorkflow(stringify(base()), { limits }).ok).toBe(true)
      let valid = 0
      for (let round = 0; round < 300; round += 1) {
        const parsed = parseWorkflow(stringify(mutate(next)), { limits })
        if (parsed.ok) {
          valid += 1
          continue
        }
        expect(parsed.issues.length).toBeGreaterThan(0)
        const text = JSON.stringify(parsed.issues)
        for (const value of SECRET_LOOKING) expect(text).not.toContain(value)
      }
      // Both outcomes are well represented.
      expect(valid).toBeGreaterThan(5)
      expect(valid).toBeLessThan(270)
    })
  }
})
