import * as v from 'valibot'
/** What the agent spent on one run, or on one step of a workflow run, as the host's usage ledger has it. */
export interface RunSpend {
  readonly runId: string
  /** The workflow step; null for cron runs and background tasks. */
  readonly stepId: string | null
  /** The model that answered (the newest, when the run's turns had several). */
  readonly model: string
  readonly inputTokens: number
  readonly outputTokens: number
  /** US dollars, for models with a price (`models.<id>.price`); null when none had one. */
  readonly costUsd: number | null
}

/**
 * Reads what runs spent (the host's usage ledger): one entry per run, or per run and step, that
 * called the model. Optional on the tools that show runs: without it they show the tokens their
 * package recorded and no model or cost. When it rejects (a ledger that cannot be read), the tools
 * still answer, with what their package recorded and `usage_unavailable: true`; the host logs why.
 */
export type RunSpendLookup = (runIds: readonly string[]) => Promise<readonly RunSpend[]>

/** What {@link lookUpSpend} answers when the lookup failed. */
export const SPEND_UNAVAILABLE = 'unavailable'

/**
 * The spends of `runIds` from `lookup`, or {@link SPEND_UNAVAILABLE} when it rejected: showing
 * tokens and cost is secondary, so a ledger read error never fails the call that shows a run.
 */
export async function lookUpSpend(
  lookup: RunSpendLookup,
  runIds: readonly string[],
): Promise<readonly RunSpend[] | typeof SPEND_UNAVAILABLE> {
  try {
    return await lookup(runIds)
  } catch {
    return SPEND_UNAVAILABLE
  }
}

/**
 * The output schema entry of a run view whose spend could not be read (`usage_unavailable: true`;
 * absent otherwise): its model and cost are then unknown, its tokens those its package recorded.
 */
export const usageUnavailableEntry = {
  usage_unavailable: v.optional(
    v.pipe(
      v.literal(true),
      v.description(
        "true when the usage ledger could not be read: model and cost are unknown (null), tokens are the run's own record",
      ),
    ),
  ),
}

/** The spend of `runId` (every step of it unless `stepId` is given), summed; undefined for none. */
export function spendOf(
  spends: readonly RunSpend[],
  runId: string,
  stepId?: string,
): { model: string; inputTokens: number; outputTokens: number; costUsd: number | null } | undefined {
  let total: { model: string; inputTokens: number; outputTokens: number; costUsd: number | null } | undefined
  for (const spend of spends) {
    if (spend.runId !== runId || (stepId !== undefined && spend.stepId !== stepId)) continue
    total = {
      model: spend.model,
      inputTokens: (total?.inputTokens ?? 0) + spend.inputTokens,
      outputTokens: (total?.outputTokens ?? 0) + spend.outputTokens,
      costUsd: spend.costUsd === null ? (total?.costUsd ?? null) : (total?.costUsd ?? 0) + spend.costUsd,
    }
  }
  return total
}

/**
 * The output schema entries of {@link spendFields}: absent when the host has no usage ledger, null
 * when the ledger knows nothing of the run.
 */
export const spendOutputEntries = {
  model: v.optional(v.nullable(v.string())),
  cost_usd: v.optional(v.nullable(v.number())),
}

/** The fields a run view gains from the ledger: `model` and `cost_usd` (null when unknown). */
export function spendFields(spend: ReturnType<typeof spendOf>): {
  model: string | null
  cost_usd: number | null
} {
  return { model: spend?.model ?? null, cost_usd: spend?.costUsd ?? null }
}
