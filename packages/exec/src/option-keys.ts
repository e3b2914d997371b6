import { optionKeys } from '@lango/option-keys'
import { ExecError } from './errors.js'

/**
 * A check that throws `EXEC_INVALID_OPTION` for the first unknown key of the options of `where`,
 * naming it, the closest accepted key and every accepted key (`data`: `option`, `suggestion`, `accepted`).
 */
export function refuseUnknownKeys(where: string, keys: readonly string[]): (options: unknown) => void {
  const check = optionKeys(where, keys)
  return (options) => {
    const unknown = check(options)
    if (unknown === undefined) return
    throw new ExecError('EXEC_INVALID_OPTION', unknown.message, {
      data: {
        option: unknown.key,
        ...(unknown.suggestion === undefined ? {} : { suggestion: unknown.suggestion }),
        accepted: unknown.accepted,
      },
    })
  }
}
