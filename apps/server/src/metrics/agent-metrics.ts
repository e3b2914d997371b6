import { Counter, type Registry } from 'prom-client'
import type { UsageRecord } from '../agent/index.js'
import { RecentLabels } from './recent-labels.js'

/** Model names with series at once: a cron job's `model` is whatever its creator wrote. */
const MAX_MODEL_NAMES = 100

/**
 * Counts agent turns, model calls (steps) and tokens by model and purpose (run, chat, observe), from
 * the usage the agent runner reports for every turn that called the model (`onUsage`).
 */
export function agentUsageMetrics(registry: Registry): (record: UsageRecord) => void {
  const registers = [registry]
  const turns = new Counter({
    name: 'lango_agent_turns_total',
    help: 'Agent turns that called the model, by model, purpose (run, chat, observe) and outcome (ok, failed).',
    labelNames: ['model', 'purpose', 'outcome'] as const,
    registers,
  })
  const steps = new Counter({
    name: 'lango_agent_steps_total',
    help: 'Model calls (steps of the tool loop) of agent turns, by model and purpose.',
    labelNames: ['model', 'purpose'] as const,
    registers,
  })
  const tokens = new Counter({
    name: 'lango_agent_tokens_total',
    help: 'Tokens the model reported, by model, purpose and direction (input, output).',
    labelNames: ['model', 'purpose', 'direction'] as const,
    registers,
  })
  const cost = new Counter({
    name: 'lango_agent_cost_usd_total',
    help: 'What agent turns cost in US dollars, by model and purpose, for models with a price (models.<name>.price).',
    labelNames: ['model', 'purpose'] as const,
    registers,
  })
  const models = new RecentLabels('model', MAX_MODEL_NAMES, [turns, steps, tokens, cost])
  return (record) => {
    const labels = { model: models.use(record.model), purpose: record.purpose }
    turns.inc({ ...labels, outcome: record.ok ? 'ok' : 'failed' })
    steps.inc(labels, record.steps)
    tokens.inc({ ...labels, direction: 'input' }, record.usage.inputTokens)
    tokens.inc({ ...labels, direction: 'output' }, record.usage.outputTokens)
    if (record.costUsd !== undefined) cost.inc(labels, record.costUsd)
  }
}
