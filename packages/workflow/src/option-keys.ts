import { optionKeys } from '@lango/option-keys'
import { invalidOptionError } from './errors.js'

/**
 * A check that throws `WORKFLOW_INVALID_OPTION` for the first unknown key of the options of
 * `where`, naming it, the closest accepted key and every accepted key (`data`: `option`,
 * `suggestion`, `accepted`). `prefix` (`'limits.'`) goes before the key in `data.option`.
 */
export function refuseUnknownKeys(
  where: string,
  keys: readonly string[],
  prefix = '',
): (options: unknown) => void {
  const check = optionKeys(where, keys)
  return (options) => {
    const unknown = check(options)
    if (unknown === undefined) return
    throw invalidOptionError(`${prefix}${unknown.key}`, unknown.message, {
      ...(unknown.suggestion === undefined ? {} : { suggestion: unknown.suggestion }),
      accepted: unknown.accepted,
    })
  }
}
