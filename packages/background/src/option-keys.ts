import { optionKeys } from '@lango/option-keys'
import { BackgroundError } from './errors.js'

/**
 * A check that throws `BACKGROUND_INVALID_INPUT` for the first unknown key of the options of
 * `where`, naming it, the closest accepted key and every accepted key (`data`: `field`,
 * `suggestion`, `accepted`).
 */
export function refuseUnknownKeys(where: string, keys: readonly string[]): (options: unknown) => void {
  const check = optionKeys(where, keys)
  return (options) => {
    const unknown = check(options)
    if (unknown === undefined) return
    throw new BackgroundError('BACKGROUND_INVALID_INPUT', unknown.message, {
      data: {
        field: unknown.key,
        ...(unknown.suggestion === undefined ? {} : { suggestion: unknown.suggestion }),
        accepted: unknown.accepted,
      },
    })
  }
}
