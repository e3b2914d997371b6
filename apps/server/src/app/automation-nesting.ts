import { runIdOfStepSession } from '@lango/workflow'

/** Links followed up a chain before it counts as too deep (far past any `maxNesting`). */
const MAX_LINKS = 16

/** What {@link automationNesting} reads: the tasks and the workflow runs, each knowing where it came from. */
export interface NestingSources {
  /** A background task's own nesting (`TaskSnapshot.nesting`); throws for an unknown or evicted task. */
  readonly task: (taskId: string) => { readonly nesting: number }
  /** A workflow run's origin (the session that started it), or undefined when it is unknown. */
  readonly run: (runId: string) => Promise<{ readonly originSession: string | null } | undefined>
}

/**
 * How deep in a chain of automation runs a turn's session is, across kinds (SECURITY.md WF-7): a
 * person's chat or a cron run 0; a background task's session (`bg:<id>`) one deeper than the task;
 * a workflow step's session one deeper than its run, which is as deep as the session that started
 * it. The packages count only their own chains, so a task that starts a workflow whose step submits
 * a task… reset at each change of kind; this follows it whole. A task or run that is no longer known
 * counts as the start of the chain; a chain longer than {@link MAX_LINKS} counts as that deep.
 */
export function automationNesting(sources: NestingSources): (sessionKey: string) => Promise<number> {
  const depth = async (session: string | null | undefined, links: number): Promise<number> => {
    if (session === null || session === undefined) return 0
    if (links >= MAX_LINKS) return MAX_LINKS
    if (session.startsWith('bg:')) {
      try {
        return sources.task(session.slice(3)).nesting + 1
      } catch {
        return 1
      }
    }
    const runId = runIdOfStepSession(session)
    if (runId === undefined) return 0
    const run = await sources.run(runId)
    return (run === undefined ? 0 : await depth(run.originSession, links + 1)) + 1
  }
  return (sessionKey) => depth(sessionKey, 0)
}
