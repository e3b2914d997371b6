/**
 * The session key a run hands each of its prompt steps, `workflow:<workflow name>:<run id>:<step id>`,
 * and the run id read back from one: the engine counts nesting through the runs a start comes from.
 * Written and read here only, so the two never drift apart.
 */
export function stepSessionKey(workflowName: string, runId: string, stepId: string): string {
  return `workflow:${workflowName}:${runId}:${stepId}`
}

/**
 * The run id of a {@link stepSessionKey}; undefined for any other session. The workflow's name may
 * hold colons, a run id and a step id do not.
 */
export function runIdOfStepSession(session: string): string | undefined {
  if (!session.startsWith('workflow:')) return undefined
  const parts = session.split(':')
  return parts.length >= 4 ? parts.at(-2) : undefined
}
