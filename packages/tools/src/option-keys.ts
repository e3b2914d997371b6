import { optionKeys } from '@lango/option-keys'
import { ToolError } from './errors.js'

/**
 * A check that throws `TOOL_INVALID_PARAMETERS` for the first unknown key of the options of
 * `where` (a factory's options, given by the host when it builds the tools), naming it, the
 * closest accepted key and every accepted key (`data`: `option`, `suggestion`, `accepted`).
 */
export function refuseUnknownKeys(where: string, keys: readonly string[]): (options: unknown) => void {
  const check = optionKeys(where, keys)
  return (options) => {
    const unknown = check(options)
    if (unknown === undefined) return
    throw new ToolError('TOOL_INVALID_PARAMETERS', unknown.message, {
      data: {
        option: unknown.key,
        ...(unknown.suggestion === undefined ? {} : { suggestion: unknown.suggestion }),
        accepted: unknown.accepted,
      },
    })
  }
}
