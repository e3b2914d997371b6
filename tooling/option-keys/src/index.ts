/**
 * Refuses option keys a reader does not know, so a misspelt option (`timoutMs`, `stroe`) fails at
 * once instead of being dropped. Own enumerable keys only; one Set lookup per key, cheap enough for
 * every call of a hot path. Source only: `@lango/exec`, `@lango/cron`, `@lango/background`,
 * `@lango/workflow` and `@lango/tools` list it as a devDependency and tsup bundles it, so no
 * package imports another at run time (as `@lango/duration`, ADR 0013); each wraps what it finds
 * in its own typed error.
 */

/** A key of an options object that its reader does not accept. */
export interface UnknownOptionKey {
  /** The first key not accepted (cut to 64 characters). */
  readonly key: string
  /** The accepted key closest to it, when one is close enough to be a typo. */
  readonly suggestion: string | undefined
  /** Every accepted key, in the order the reader lists them. */
  readonly accepted: readonly string[]
  /** `unknown option "stroe" in CronService options (did you mean "store"?); accepted: store, …`. */
  readonly message: string
}

/**
 * A checker for the options object of `where` (`'run options'`) that accepts `keys`: it returns
 * the first unknown key, or undefined. Anything that is not a plain object passes: the type checks
 * of the caller deal with it.
 */
export function optionKeys(
  where: string,
  keys: readonly string[],
): (options: unknown) => UnknownOptionKey | undefined {
  const known = new Set(keys)
  return (options) => {
    if (typeof options !== 'object' || options === null) return undefined
    for (const key in options) {
      if (known.has(key) || !Object.hasOwn(options, key)) continue
      return unknownKey(where, key, keys)
    }
    return undefined
  }
}

function unknownKey(where: string, key: string, accepted: readonly string[]): UnknownOptionKey {
  const shown = key.slice(0, 64)
  const suggestion = closest(shown, accepted)
  const hint = suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`
  return {
    key: shown,
    suggestion,
    accepted,
    message: `unknown option ${JSON.stringify(shown)} in ${where}${hint}; accepted: ${accepted.join(', ')}`,
  }
}

/** The accepted key within a typo's reach of `key` (case ignored), the nearest one first. */
function closest(key: string, accepted: readonly string[]): string | undefined {
  const lower = key.toLowerCase()
  let best: string | undefined
  let bestDistance = Number.POSITIVE_INFINITY
  for (const candidate of accepted) {
    const reach = Math.max(2, Math.floor(Math.max(key.length, candidate.length) / 3))
    const distance = editDistance(lower, candidate.toLowerCase())
    if (distance <= reach && distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Edits (insert, delete, replace, swap of neighbours) that turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, column) => column)]
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let value = Math.min(
        (rows[i - 1]?.[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (rows[i - 1]?.[j - 1] ?? 0) + cost,
      )
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, (rows[i - 2]?.[j - 2] ?? 0) + 1)
      row.push(value)
    }
    rows.push(row)
  }
  return rows[a.length]?.[b.length] ?? 0
}
