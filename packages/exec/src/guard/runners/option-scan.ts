import type { Argument } from '../option-parser.js'

/**
 * A light scan of an argv for the runners that need no full option table: where the operands start,
 * and the value of one option.
 */

/** Options that take a separate value, for the simple runners that do not need a full table. */
export interface OptionSpec {
  /** Short option letters that take a value (`-u root` or `-uroot`). */
  readonly short?: string
  /** Long option names (without `--`) that take the next word as value when written without `=`. */
  readonly long?: readonly string[]
}

/** Index of the first operand at or after `start`, skipping options and their values. */
export function skipOptions(argv: readonly Argument[], start: number, spec: OptionSpec = {}): number {
  let index = start
  while (index < argv.length) {
    const text = argv[index]?.literal
    // A run-time word in option position may be the command itself: stop here and look at it.
    if (text === undefined) return index
    if (text === '--') return index + 1
    if (text.length < 2 || !text.startsWith('-')) return index
    if (text.startsWith('--')) {
      const name = text.slice(2)
      index += !name.includes('=') && spec.long?.includes(name) ? 2 : 1
      continue
    }
    let consumed = 1
    for (let position = 1; position < text.length; position++) {
      if (spec.short?.includes(text[position] as string)) {
        if (position === text.length - 1) consumed = 2
        break
      }
    }
    index += consumed
  }
  return index
}

/** Value of `-x VALUE`, `-xVALUE`, `--long VALUE` or `--long=VALUE` anywhere in argv. */
export function findOptionValue(
  argv: readonly Argument[],
  short: readonly string[],
  long: readonly string[],
): string | undefined {
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal
    if (text === undefined) continue
    if (text === '--') return undefined
    for (const name of long) {
      if (text === `--${name}`) return argv[index + 1]?.loose ?? ''
      if (text.startsWith(`--${name}=`)) return text.slice(name.length + 3)
    }
    for (const option of short) {
      // `-c VALUE`, or a flag cluster ending in the letter: `script -qc VALUE`.
      const clustered = text.length > 2 && /^-[A-Za-z]+$/.test(text) && text.endsWith(option.slice(1))
      if (text === option || clustered) return argv[index + 1]?.loose ?? ''
    }
  }
  return undefined
}
