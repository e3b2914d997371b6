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
 *   the eye could not see, at the very start or end of the text, shows as `\u{20}` (`cwd: ⟦/srv\u{20}⟧`
 *   is another directory than `/srv`).
 * - A tab, and every other character that could hide text, shows escaped (`\u{9}`, `\u{1b}`,
 *   `\u{a0}`, `\u{d}`): no look-alike space, nothing a terminal would obey.
 * - A literal `↵`, a backslash the text holds before `u{`, and the quote marks `⟦` `⟧` (see
 *   {@link quoted}) are escaped too (`\u{21b5}`, `\u{5c}u{…}`, `\u{27e6}`, `\u{27e7}`), so no mark
 *   can be faked: a `↵` is always a line break, a `\u{…}` always an escaped character, a `⟧` always
 *   the end of a quoted value.
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
      // line break, a `\u{…}` always an escaped character and a `⟧` always the end of a quoted value:
      // a command cannot fake any of them.
      .replace(/[↵⟦⟧]|\\(?=u\{)/g, escaped)
      // A space at either end would not show: escaped, each one (before the line feeds turn into marks,
      // whose own spaces are not the text's).
      .replace(/^ +| +$/g, (spaces) => escaped(' ').repeat(spaces.length))
      .replace(/\n/g, ' ↵ ')
      // Now any space at either end is a mark's own, with no text on that side: dropped.
      .replace(/^ | $/g, '')
      .replace(HIDING, escaped)
  )
}

/**
 * A value the caller chose (a command, a prompt, a path, a name, a URL, a schedule, a target), as an
 * approval line shows it: {@link wholeLine} between `⟦` and `⟧`. The text inside is exactly the
 * value, its `;`, `"` and `:` as they are (a person reads the real command), and since `wholeLine`
 * escapes `⟦` and `⟧` the value cannot end early: `command: ⟦make; results go to: nowhere⟧` is
 * all one command, not a command and a detail. An empty value shows as `⟦⟧`. Everything outside
 * the marks is written by the code (labels such as `results go to:`, `cwd:`, separators).
 */
export function quoted(text: unknown): string {
  return `⟦${wholeLine(text)}⟧`
}

/** Text that could not read as anything but one value: letters, digits, `_`, `.` and `-`. */
const WORD = /^[\w.-]+$/

/**
 * A value from a tool's own vocabulary (a number, `true`/`false`, a choice such as `main` or
 * `failure`, a duration such as `2h`, an environment variable's name), as an approval line shows
 * it: as is when it is one word (it holds no space, `;` or `:`, so it cannot read as a second
 * detail); anything else {@link quoted}, as a value the caller wrote.
 */
export function word(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return typeof value === 'string' && WORD.test(value) ? value : quoted(value)
}
