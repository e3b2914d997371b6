/**
 * The one duration grammar of Lango (docs/decisions/0013-one-duration-grammar.md).
 *
 * Terminology:
 * - duration: one or more parts `<amount><unit>`, e.g. `90s`, `10m`, `1h30m`, `1.5h`, `2m 30s`.
 *   An amount is digits with an optional fraction (`1.5`); a unit is `ms`, `s`, `m`, `h`, `d` or
 *   `w` (any case). Spaces may separate parts and an amount from its unit; parts add up in any order.
 * - reading: whole milliseconds, rounded half up, exactly (no floating point on the way).
 * - bare number: digits without a unit (`600`). It is never read: is it seconds or milliseconds?
 *   Each caller that has a documented unit for numbers (a JSON number of seconds, a stored value in
 *   milliseconds) applies it itself, before or instead of calling {@link readDuration}.
 *
 * This is source, not a package of its own at run time: `@lango/cron`, `@lango/workflow` and
 * `@lango/server` list it as a devDependency and tsup bundles it into their `dist`, so packages still
 * do not import each other (STYLE.md 2.1). None of its types may appear in their public declarations.
 */

/** Why a text is not a duration. */
export type DurationProblem =
  /** Nothing but white space. */
  | 'empty'
  /** Longer than {@link DURATION_MAX_LENGTH} characters. */
  | 'too-long'
  /** A bare number such as `600`: seconds or milliseconds? */
  | 'unit-missing'
  /** Anything else the grammar does not describe (`10 minutes`, `-5m`, `1h30`, `PT10M`). */
  | 'not-a-duration'
  /** More milliseconds than `Number.MAX_SAFE_INTEGER`. */
  | 'too-large'

/** What {@link readDuration} made of a text. */
export type DurationReading =
  | { readonly ok: true; readonly milliseconds: number }
  | { readonly ok: false; readonly problem: DurationProblem }

/** The longest text read as a duration (after trimming). */
export const DURATION_MAX_LENGTH = 64

/** The accepted forms, for messages: "…; expected " + DURATION_FORMS. */
export const DURATION_FORMS =
  'a number with a unit (ms, s, m, h, d or w), such as 90s, 10m, 1h30m, 1.5h or 2d'

/**
 * Reads a duration in whole milliseconds, or says why the text is not one.
 *
 * Self-contained on purpose: the dashboard embeds this function's own source
 * (`String(readDuration)`, apps/server/src/ui/script.ts), so its body uses nothing from outside
 * it but JavaScript's globals.
 * @example readDuration('1h30m') // { ok: true, milliseconds: 5_400_000 }
 * @example readDuration('600') // { ok: false, problem: 'unit-missing' }
 */
export function readDuration(text: string): DurationReading {
  const unitMilliseconds: Readonly<Record<string, bigint>> = {
    ms: 1n,
    s: 1000n,
    m: 60_000n,
    h: 3_600_000n,
    d: 86_400_000n,
    w: 604_800_000n,
  }
  if (typeof text !== 'string') return { ok: false, problem: 'not-a-duration' }
  const trimmed = text.trim()
  if (trimmed === '') return { ok: false, problem: 'empty' }
  if (trimmed.length > 64) return { ok: false, problem: 'too-long' }
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return { ok: false, problem: 'unit-missing' }
  const lower = trimmed.toLowerCase()
  if (!/^(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d|w)\s*)+$/.test(lower))
    return { ok: false, problem: 'not-a-duration' }
  const parts = [...lower.matchAll(/(\d+)(?:\.(\d+))?\s*(ms|s|m|h|d|w)/g)]
  // Every amount as a whole number over 10^scale: `1.5h` is 15 × 3,600,000 / 10.
  let scale = 0
  for (const part of parts) scale = Math.max(scale, (part[2] ?? '').length)
  const denominator = 10n ** BigInt(scale)
  let numerator = 0n
  for (const part of parts) {
    const digits = `${part[1]}${(part[2] ?? '').padEnd(scale, '0')}`
    numerator += BigInt(digits) * (unitMilliseconds[part[3] as string] as bigint)
  }
  const milliseconds = (numerator * 2n + denominator) / (2n * denominator)
  if (milliseconds > BigInt(Number.MAX_SAFE_INTEGER)) return { ok: false, problem: 'too-large' }
  return { ok: true, milliseconds: Number(milliseconds) }
}

/**
 * What is wrong with `text` and what to write instead, for a message after the field's name:
 * `timeout ${durationProblemMessage(text, problem)}`. Quotes nothing of the input but the digits of
 * a bare number.
 * @example durationProblemMessage('600', 'unit-missing')
 * // 'has no unit: write "600s" for seconds or "600ms" for milliseconds (a duration is a number with a unit …)'
 */
export function durationProblemMessage(text: string, problem: DurationProblem): string {
  const forms = `a duration is ${DURATION_FORMS}`
  switch (problem) {
    case 'unit-missing': {
      const digits = text.trim()
      // No "0s" to suggest: most fields refuse a zero duration, and it would be refused next.
      if (/^0*\.?0*$/.test(digits)) return `has no unit; ${forms}`
      return `has no unit: write "${digits}s" for seconds or "${digits}ms" for milliseconds (${forms})`
    }
    case 'empty':
      return `is empty; ${forms}`
    case 'too-long':
      return `is longer than ${DURATION_MAX_LENGTH} characters; ${forms}`
    case 'too-large':
      return `is longer than any time that can be counted in milliseconds; ${forms}`
    case 'not-a-duration':
      return `is not a duration; ${forms}`
  }
}

/**
 * Milliseconds as the shortest duration that reads back to exactly them: `5_400_000` → `1h30m`,
 * `90_500` → `1m30s500ms`, `0` → `0s`. For messages and suggestions an operator may copy back.
 */
export function formatDuration(milliseconds: number): string {
  if (!Number.isSafeInteger(milliseconds) || milliseconds < 0) return `${milliseconds}ms`
  if (milliseconds === 0) return '0s'
  const parts: string[] = []
  let rest = milliseconds
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  return parts.join('')
}
