import type { AgentRunner } from './agent-runner.js'
import { AgentError } from './errors.js'

/**
 * The error every agent call gets while no model is configured; the same words the server used
 * before the runner existed, so history rows and CLI output stay as they were.
 */
export const NO_MODEL_MESSAGE =
  'no model configured (set LANGO_MODEL_BASE_URL and LANGO_MODEL, or model: in lango.yaml)'

/**
 * The runner of a server without a model: every call rejects `AGENT_NO_MODEL`. Kept apart from
 * `createAgentRunner` so such a server never loads the AI SDK.
 */
export function noModelRunner(): AgentRunner {
  const noModel = async (): Promise<never> => {
    throw new AgentError('AGENT_NO_MODEL', NO_MODEL_MESSAGE)
  }
  return { configured: false, run: noModel, chat: noModel, observe: noModel }
}
