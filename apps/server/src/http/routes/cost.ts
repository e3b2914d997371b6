import { Hono } from 'hono'
import type { App } from '../../app/app.js'
import type { CostGrouping } from '../../usage/usage-ledger.js'
import { errorResponse, knownQuery } from '../responses.js'

const GROUPINGS: readonly CostGrouping[] = ['job', 'model', 'day']
const UNIT_MS: Readonly<Record<string, number>> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/**
 * `since` as epoch milliseconds: a span back from `now` (`30m`, `24h`, `7d`, `2w`) or an ISO date
 * or date-time (`2026-11-01`, UTC when it names no zone); undefined when it is neither.
 */
function sinceMs(value: string, now: number): number | undefined {
  const span = /^(\d{1,6})([mhdw])$/.exec(value.trim())
  if (span !== null) return now - Number(span[1]) * (UNIT_MS[span[2] as string] as number)
  const date = /^(\d{4})-(\d{2})-(\d{2})/.exec(value.trim())
  if (date === null) return undefined
  const parsed = Date.parse(value.trim())
  // `2026-02-30` is no date (Date.parse would roll it over to 2 March).
  const [year, month, day] = [Number(date[1]), Number(date[2]), Number(date[3])]
  const calendar = new Date(Date.UTC(year, month - 1, day))
  if (calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day) return undefined
  return Number.isNaN(parsed) ? undefined : parsed
}

/**
 * What agent turns used and cost, from the usage ledger, mounted at `/api/cost`:
 * `GET /api/cost?by=job|model|day&since=7d` (`lango cost`).
 */
export function costRoutes(app: App): Hono {
  const routes = new Hono()
  routes.get('/', knownQuery(['by', 'since']), async (c) => {
    const by = (c.req.query('by') || 'job') as CostGrouping
    if (!GROUPINGS.includes(by)) {
      const message = `by must be one of ${GROUPINGS.join(', ')}`
      return errorResponse(c, 'INVALID_REQUEST', message, { issues: [{ path: 'by', message }] })
    }
    const since = c.req.query('since') || undefined
    const from = since === undefined ? undefined : sinceMs(since, Date.now())
    if (since !== undefined && from === undefined) {
      const message = 'since must be a span such as 24h, 7d or 2w, or an ISO date such as 2026-11-01'
      return errorResponse(c, 'INVALID_REQUEST', message, { issues: [{ path: 'since', message }] })
    }
    const lines = await app.usage.summary({ by, ...(from === undefined ? {} : { sinceMs: from }) })
    const total = lines.reduce(
      (sum, line) => ({
        turns: sum.turns + line.turns,
        input_tokens: sum.input_tokens + line.inputTokens,
        output_tokens: sum.output_tokens + line.outputTokens,
        // Whole nano-dollars, as the ledger stores them: no float noise (0.0131999…98) in the sum.
        cost_usd: Math.round((sum.cost_usd + line.costUsd) * 1e9) / 1e9,
        budget_exhausted: sum.budget_exhausted + line.budgetExhausted,
      }),
      { turns: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0, budget_exhausted: 0 },
    )
    return c.json({
      by,
      since: from === undefined ? null : new Date(from).toISOString(),
      lines: lines.map((line) => ({
        [by]: line.key,
        turns: line.turns,
        input_tokens: line.inputTokens,
        output_tokens: line.outputTokens,
        cost_usd: line.costUsd,
        budget_exhausted: line.budgetExhausted,
      })),
      total,
    })
  })
  return routes
}
