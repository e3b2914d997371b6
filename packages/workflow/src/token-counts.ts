/** A step's token counts as stored: each a whole number of tokens, or null when not reported. */
export interface TokenCounts {
  readonly inputTokens: number | null
  readonly outputTokens: number | null
}

/** What a step stores when the agent reported nothing usable (and for every `run` step). */
export const NO_TOKEN_COUNTS: TokenCounts = Object.freeze({ inputTokens: null, outputTokens: null })

/**
 * The counts of an agent answer's `usage`, checked: the runner is the host's code, so a count that
 * is missing, negative or not a finite number becomes null rather than trusted, and fractions are
 * rounded (the columns are integers).
 */
export function tokenCounts(usage: unknown): TokenCounts {
  if (typeof usage !== 'object' || usage === null) return NO_TOKEN_COUNTS
  const { inputTokens, outputTokens } = usage as { inputTokens?: unknown; outputTokens?: unknown }
  return { inputTokens: tokenCount(inputTokens), outputTokens: tokenCount(outputTokens) }
}

function tokenCount(value: unknown): number | null {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null
  return Math.min(Math.round(value), Number.MAX_SAFE_INTEGER)
}

/** `a` and `b` summed (a step's attempts): null only where neither reported a count. */
export function addTokenCounts(a: TokenCounts, b: TokenCounts): TokenCounts {
  const add = (x: number | null, y: number | null): number | null =>
    x === null ? y : y === null ? x : Math.min(x + y, Number.MAX_SAFE_INTEGER)
  return { inputTokens: add(a.inputTokens, b.inputTokens), outputTokens: add(a.outputTokens, b.outputTokens) }
}

/**
 * What a rejection of `AgentRunner.run` says (`AgentRunFailure`): the tokens spent before it failed,
 * and whether another attempt cannot help (`retryable: false`). Read from any thrown value.
 */
export function failureOf(error: unknown): { readonly tokens: TokenCounts; readonly final: boolean } {
  if (typeof error !== 'object' || error === null) return { tokens: NO_TOKEN_COUNTS, final: false }
  const { usage, retryable } = error as { usage?: unknown; retryable?: unknown }
  return { tokens: tokenCounts(usage), final: retryable === false }
}
