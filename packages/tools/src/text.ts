/** Control and format characters (escape sequences, bidi overrides, zero-width marks) that could hide text. */
const HIDING = /[\p{Cc}\p{Cf}]/gu

/**
 * Text on one line, whole, as an approval prompt shows it: line breaks as ` ↵ ` (a newline in a
 * command separates commands, so it must stay visible), other whitespace runs as one space, control
 * and format characters escaped (`\u{1b}`). Never cut: an approver sees every character that runs
 * (SECURITY.md SEC-9, CRON-5).
 */
export function wholeLine(text: unknown): string {
  return (typeof text === 'string' ? text : String(text ?? ''))
    .trim()
    .replace(/[^\S\r\n]+/g, ' ')
    .replace(/\s*[\r\n]+\s*/g, ' ↵ ')
    .replace(HIDING, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`)
}
