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
