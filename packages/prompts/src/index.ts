export {
  type AutomationFeatures,
  buildAutomationPromptSection,
  LANGO_EXEC_PROHIBITION,
} from './automation-section.js'
export { TOOL_USAGE } from './tool-usage.js'
