/**
 * Characters that could hide or disguise text in an approval prompt: controls and format characters
 * (a tab, escape sequences, carriage returns, bidi overrides, zero-width marks), every separator but
 * the ASCII space (a no-break space, an en space or a line separator reads as a space where the
 * shell sees part of a word), code points that render as nothing (Hangul fillers, variation
 * selectors, a combining grapheme joiner: `Default_Ignorable_Code_Point`), and the braille blank.
 */
const HIDING = /(?! )[\p{Cc}\p{Cf}\p{Z}\p{Default_Ignorable_Code_Point}\u2800]/gu

/** `character` as an approval prompt shows an escaped one: `\u{9}`, `\u{1b}`, `\u{21b5}`. */
function escaped(character: string): string {
  return `\\u{${(character.codePointAt(0) as number).toString(16)}}`
}

/**
 * Text on one line, whole and character for character, as an approval prompt shows it: what the
 * approver reads is what runs, with nothing added, dropped or folded (SECURITY.md SEC-9, CRON-5).
 *
 * - A line feed shows as ` ↵ ` (a newline in a command separates commands, so it must stay
 *   visible): `↵` with a space on each side that has text. Those spaces are the mark's own; every
 *   other space is the text's.
 * - Spaces stay as they are, every one: `"a    b"` is not `"a b"` to `printf`, and a heredoc'd
 *   script's indentation (which lines sit inside an `if`) shows as the spaces after a `↵`. A space
 *   the eye could not see, at the very start or end of the text, shows as `\u{20}` (`cwd: /srv\u{20}`
 *   is another directory than `/srv`).
 * - A tab, and every other character that could hide text, shows escaped (`\u{9}`, `\u{1b}`,
 *   `\u{a0}`, `\u{d}`): no look-alike space, nothing a terminal would obey.
 * - A literal `↵`, and a backslash the text holds before `u{`, are escaped too (`\u{21b5}`,
 *   `\u{5c}u{…}`), so neither mark can be faked: a `↵` is always a line break, a `\u{…}` always an
 *   escaped character.
 *
 * One line, not the text's own lines, on purpose: the lines of an approval summary are its
 * structure (the headline that announcements and tables show, one line per workflow step, the
 * details after ` — `), so a value never adds a line and a command cannot forge one (a fake
 * `[step]` line, a harmless-looking headline). The whole-summary views (the dashboard, `lango
 * approvals show`, a chat message) keep runs of spaces, so the indentation after each `↵` reads as
 * written. Never cut.
 */
export function wholeLine(text: unknown): string {
  return (
    (typeof text === 'string' ? text : String(text ?? ''))
      // What the text itself holds of the marks used below is escaped first, so that a ` ↵ ` is always a
      // line break and a `\u{…}` always an escaped character: a command cannot fake either.
      .replace(/↵|\\(?=u\{)/g, escaped)
      // A space at either end would not show: escaped, each one (before the line feeds turn into marks,
      // whose own spaces are not the text's).
      .replace(/^ +| +$/g, (spaces) => escaped(' ').repeat(spaces.length))
      .replace(/\n/g, ' ↵ ')
      // Now any space at either end is a mark's own, with no text on that side: dropped.
      .replace(/^ | $/g, '')
      .replace(HIDING, escaped)
  )
}
