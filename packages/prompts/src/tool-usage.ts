import { TOOL_USAGE_TEXT } from './tool-usage-text.js'

/**
 * The text of `TOOL_USAGE.md`, the system-prompt guide to every tool, embedded in the module (no
 * file is read at import, so bundled hosts work). The same file ships in the package
 * (`@lango/prompts/TOOL_USAGE.md`) for hosts that read prompts from disk.
 */
export const TOOL_USAGE: string = TOOL_USAGE_TEXT
