/**
 * Characters that could hide or disguise text in an approval prompt: controls and format characters
 * (escape sequences, carriage returns, bidi overrides, zero-width marks), every separator but the
 * ASCII space (a no-break space, an en space or a line separator reads as a space where the shell
 * sees part of a word), code points that render as nothing (Hangul fillers, variation selectors, a
 * combining grapheme joiner: `Default_Ignorable_Code_Point`), and the braille blank.
 */
const HIDING = /(?! )[\p{Cc}\p{Cf}\p{Z}\p{Default_Ignorable_Code_Point}\u2800]/gu

/**
 * Text on one line, whole, as an approval prompt shows it: line feeds as ` ↵ ` (a newline in a
 * command separates commands, so it must stay visible), runs of spaces and tabs as one space (the
 * shell splits words on either), and every other character that could hide text escaped
 * (`\u{1b}`, `\u{a0}`, `\u{d}`): what the approver reads is what the shell parses, with no
 * look-alike space. A literal `↵`, and a backslash the text holds before `u{`, are escaped too
 * (`\u{21b5}`, `\u{5c}u{…}`), so neither mark can be faked. Never cut: an approver sees every character that runs (SECURITY.md SEC-9,
 * CRON-5).
 */
export function wholeLine(text: unknown): string {
  return (
    (typeof text === 'string' ? text : String(text ?? ''))
      // What the text itself holds of the marks used below is escaped first, so that a ` ↵ ` is always a
      // line break and a `\u{…}` always an escaped character: a command cannot fake either.
      .replace(/↵|\\(?=u\{)/g, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`)
      .replace(/^[ \t\n]+|[ \t\n]+$/g, '')
      .replace(/[ \t]+/g, ' ')
      .replace(/ ?\n[ \n]*/g, ' ↵ ')
      .replace(HIDING, (character) => `\\u{${(character.codePointAt(0) as number).toString(16)}}`)
  )
}
