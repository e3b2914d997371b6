import { Option } from 'commander'
import type { Register } from '../command.js'
import type { Output } from '../output.js'

/** The sums of `GET /api/cost`, per line and in total. */
interface CostSums {
  readonly turns: number
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cost_usd: number
  readonly budget_exhausted: number
}

/** One line: the sums and its key under the grouping's name (`job`, `model`, `day`). */
type CostLineView = CostSums & { readonly job?: string; readonly model?: string; readonly day?: string }

interface CostView {
  readonly by: 'job' | 'model' | 'day'
  readonly since: string | null
  readonly lines: readonly CostLineView[]
  readonly total: CostSums
}

/** `lango cost`: what agent turns used and cost, summed by job, model or day, over the server's API. */
export const registerCost: Register = (program, action) => {
  program
    .command('cost')
    .description(
      'tokens and cost of agent turns (cron, background, workflow, chat), summed from the usage ledger',
    )
    .addOption(new Option('--by <grouping>', 'sum by').choices(['job', 'model', 'day']).default('job'))
    .option('--since <when>', 'only turns since a span back (24h, 7d, 2w) or an ISO date (2026-11-01)')
    .action(
      action(async (context, _args, options) => {
        const client = await context.client()
        const data = await client.get<CostView>('/api/cost', {
          query: { by: options.by, since: options.since },
        })
        return { data, render: (out) => renderCost(out, data) }
      }),
    )
}

const usd = (value: number) => `$${value.toFixed(4)}`
const count = (value: number) => value.toLocaleString('en-US')

function renderCost(out: Output, view: CostView): void {
  out.table(
    [view.by.toUpperCase(), 'TURNS', 'INPUT', 'OUTPUT', 'COST', 'STOPPED'],
    [
      ...view.lines.map((line) => [
        String(line[view.by] ?? ''),
        count(line.turns),
        count(line.input_tokens),
        count(line.output_tokens),
        usd(line.cost_usd),
        count(line.budget_exhausted),
      ]),
      ...(view.lines.length === 0
        ? []
        : [
            [
              'total',
              count(view.total.turns),
              count(view.total.input_tokens),
              count(view.total.output_tokens),
              usd(view.total.cost_usd),
              count(view.total.budget_exhausted),
            ],
          ]),
    ],
    `no agent turns recorded${view.since === null ? '' : ` since ${view.since}`}`,
  )
}
