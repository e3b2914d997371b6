import { DURATION_TABLE } from '@lango/duration/table'
import { describe, expect, it } from 'vitest'
import { AGENT_WORKFLOW_LIMITS } from './limits.js'
import { parseWorkflow } from './parse-workflow.js'

// ADR 0013: every entry point reads the one table the same way. Here: workflow YAML step timeouts
// (at most AGENT_WORKFLOW_LIMITS.maxTimeoutMs, 1 h) and retry back-offs (at most 1 h).

const HOUR = 3_600_000

function step(field: 'timeout' | 'backoff', value: string): string {
  const quoted = JSON.stringify(value)
  const extra = field === 'timeout' ? `timeout: ${quoted}` : `retry: { attempts: 2, backoff: ${quoted} }`
  return `name: durations\nsteps:\n  - { id: a, run: "true", ${extra} }\n`
}

describe.each(['timeout', 'backoff'] as const)('the duration table in a workflow step %s', (field) => {
  it.each(DURATION_TABLE)('$input', (row) => {
    const parsed = parseWorkflow(step(field, row.input), { limits: AGENT_WORKFLOW_LIMITS })
    const accepted =
      'milliseconds' in row && row.milliseconds <= HOUR && (row.milliseconds > 0 || field === 'backoff')
    if (accepted) {
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues))
      const [first] = parsed.workflow.definition.steps
      expect(field === 'timeout' ? first?.timeoutMs : first?.retry?.backoffMs).toBe(row.milliseconds)
    } else {
      expect(parsed.ok).toBe(false)
      if (parsed.ok) return
      expect(parsed.issues.map((issue) => issue.code)).toEqual(['invalid_duration'])
      const [issue] = parsed.issues
      if ('problem' in row && row.problem === 'unit-missing') expect(issue?.message).toMatch(/^has no unit/)
      else if ('problem' in row) expect(issue?.message).toMatch(/^is (not a duration|empty|longer than)/)
      // A step with no time at all would fail at run time: refused here (an outside probe).
      else if (row.milliseconds === 0)
        expect(issue?.message).toBe('must be more than zero, at most 1h (such as 30s or 5m)')
      else expect(issue?.message).toBe('must be at most 1h (such as 30s or 5m)')
    }
  })

  it('refuses a YAML number (no unit) with the same typed error', () => {
    const parsed = parseWorkflow(step(field, 'x').replace('"x"', '30'))
    expect(parsed.ok === false && parsed.issues.map((issue) => [issue.code, issue.message])).toEqual([
      [
        'invalid_duration',
        'has no unit: a bare number could be seconds or milliseconds; write it with one, such as 30s, 5m, 1h30m or 500ms',
      ],
    ])
  })
})

describe('a zero duration', () => {
  it('is refused as a step timeout before anything runs, and allowed as a retry back-off', () => {
    // An outside probe: `timeout: 0s` passed validation and failed the step at run time.
    for (const zero of ['0s', '0ms', '0m0s']) {
      const parsed = parseWorkflow(step('timeout', zero), { limits: AGENT_WORKFLOW_LIMITS })
      expect(parsed.ok === false && parsed.issues.map((issue) => [issue.code, issue.message])).toEqual([
        ['invalid_duration', 'must be more than zero, at most 1h (such as 30s or 5m)'],
      ])
    }
    const backoff = parseWorkflow(step('backoff', '0s'), { limits: AGENT_WORKFLOW_LIMITS })
    expect(backoff.ok && backoff.workflow.definition.steps[0]?.retry?.backoffMs).toBe(0)
  })
})
