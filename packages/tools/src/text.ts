/** Longest text an approval line shows whole; longer text shows its head and its tail. */
const WHOLE_TEXT_LIMIT = 2000

/** Control and format characters (escape sequences, bidi overrides, zero-width marks) that could hide text. */
const HIDING = /[\p{Cc}\p{Cf}]/gu

/**
 * Text on one line, as an approval prompt shows it: line breaks as ` ↵ ` (a newline in a command
 * separates commands, so it must stay visible), other whitespace runs as one space, control and
 * format characters escaped (`\u{1b}`); cut to `max` characters with `…`.
 */
export function oneLine(text: unknown, max: number): string {
  const line = (typeof text === 'string' ? text : String(text ?? ''))
    .trim()
    .replace(/[^\S\r\n]+/g, ' ')
    .replace(/\s*[\r\n]+\s*/g, ' ↵ ')
    .replace(HIDING, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`)
  return line.length > max ? `${line.slice(0, max)}…` : line
}

/**
 * Text on one line shown whole up to {@link WHOLE_TEXT_LIMIT} characters; longer text shows its
 * first and last halves of that and says how many characters lie between, so an approver always
 * knows what is not shown (SECURITY.md CRON-5: a persisted prompt or command is shown in full).
 */
export function wholeLine(text: unknown): string {
  const line = oneLine(text, Number.POSITIVE_INFINITY)
  if (line.length <= WHOLE_TEXT_LIMIT) return line
  const half = WHOLE_TEXT_LIMIT / 2
  return `${line.slice(0, half)} …[${line.length - 2 * half} more characters, ${line.length} in all]… ${line.slice(-half)}`
}
