import { readFileSync } from 'node:fs'

/**
 * The text of `TOOL_USAGE.md`, the system-prompt guide to every tool. The same file ships in the
 * package (`@lango/prompts/TOOL_USAGE.md`) for hosts that read prompts from disk.
 */
export const TOOL_USAGE: string = readFileSync(new URL('../TOOL_USAGE.md', import.meta.url), 'utf8')
