import { describe, expect, it } from 'vitest'
import { WorkflowError } from './errors.js'

describe('WorkflowError', () => {
  it('is recognised across copies by its brand', () => {
    const error = new WorkflowError('WORKFLOW_RUN_NOT_FOUND', 'No workflow run with this id')
    expect(WorkflowError.is(error)).toBe(true)
    expect(WorkflowError.is({ name: 'WorkflowError' })).toBe(false)
    expect(WorkflowError.is({ name: 'WorkflowError', [Symbol.for('lango.error')]: true })).toBe(true)
  })

  it('serialises name, code, message, data and issues, never cause or stack', () => {
    const cause = new Error('inner secret')
    const error = new WorkflowError('WORKFLOW_RUN_NOT_FOUND', 'No workflow run with this id', {
      data: { runId: 'r' },
      cause,
    })
    expect(error.cause).toBe(cause)
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      name: 'WorkflowError',
      code: 'WORKFLOW_RUN_NOT_FOUND',
      message: 'No workflow run with this id',
      data: { runId: 'r' },
    })
    const invalid = new WorkflowError('WORKFLOW_INVALID', 'Workflow is invalid (1 problem)', {
      issues: [{ path: 'steps', message: 'must list at least one step', code: 'invalid_value' }],
    })
    const json = invalid.toJSON()
    expect(Object.keys(json)).toEqual(['name', 'code', 'message', 'issues'])
    expect(json.issues).toEqual([
      { path: 'steps', message: 'must list at least one step', code: 'invalid_value' },
    ])
    expect(JSON.stringify(new WorkflowError('WORKFLOW_ENGINE_STOPPED', 'stopped', { cause }))).not.toMatch(
      /inner secret|stack|cause/,
    )
  })
})
