import { buildAutomationPromptSection } from '@lango/prompts'
import type { ServerConfig } from '../config/types.js'

/** Which automation features are on: the `lango` guard names them as available, MCP's instructions describe them. */
export function automationOf(config: ServerConfig) {
  return {
    cron: config.cron.enabled,
    background: config.background.enabled,
    workflow: config.workflow.enabled,
  }
}

/** The MCP server's `instructions`: the automation prompt section for the features that are on. */
export function automationInstructions(config: ServerConfig): string {
  return buildAutomationPromptSection(automationOf(config))
}
