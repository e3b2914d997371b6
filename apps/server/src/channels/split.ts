/** A code fence open at some point of a text: what closes it, and the line that reopens it. */
interface OpenFence {
  /** The opening line as written (`` ```python ``), put at the start of the next part. */
  readonly opener: string
  /** The fence character. */
  readonly marker: string
  /** The run length: a closing fence needs at least as many markers. */
  readonly length: number
}

/** A fence line (CommonMark): up to three spaces, three or more backticks or tildes, an info string. */
const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/
/** A fence-looking start, which a hard cut must not leave at the start of the next part. */
const FENCE_START = / {0,3}(?:`{3}|~{3})/y

/**
 * Splits `text` into messages of at most `limit` UTF-16 code units (what Telegram's 4096 and
 * Discord's 2000 count, or fewer). A text that fits is one part, unchanged. A longer one is cut, in
 * this order of preference, where the part would end at least half full:
 *
 * 1. at a paragraph boundary outside a code fence (before a blank line, before a fence's opening
 *    line, after its closing line);
 * 2. at a blank line inside a code fence;
 *
 * else at the last line boundary that fits, else hard, mid-line (never inside a surrogate pair, nor
 * where the next part would start like a fence). The line break and any blank lines at a boundary cut
 * are dropped; a hard cut drops nothing.
 *
 * A part that ends inside a ```` ``` ```` (or `~~~`) fence is closed with the fence's marker and the next
 * part reopens it with the same line (`` ```python ``), so every part renders on its own. Only a fence
 * whose opening and closing lines take at most half the limit is carried so (else it is left as the
 * text has it); a line that starts like a fence is cut only when it alone is longer than a part.
 * Blank parts are dropped: services refuse empty messages.
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError('limit must be an integer of at least 2')
  const parts: string[] = []
  const push = (reopen: string, body: string, close: string): void => {
    if (body.trim() !== '') parts.push(`${reopen}${body}${close}`)
  }
  let rest = text
  let open: OpenFence | undefined
  while (rest !== '') {
    const reopen = open !== undefined && carries(open, limit) ? `${open.opener}\n` : ''
    const budget = limit - reopen.length
    if (rest.length <= budget) {
      push(reopen, rest, '')
      break
    }
    const cut = chooseCut(rest, budget, open, limit)
    push(
      reopen,
      rest.slice(0, cut.end),
      cut.open !== undefined && carries(cut.open, limit) ? `\n${closer(cut.open)}` : '',
    )
    rest = rest.slice(cut.next)
    open = cut.open
  }
  return parts
}

/** Where a part ends (`end`), where the next begins (`next`), and the fence open there. */
interface Cut {
  readonly end: number
  readonly next: number
  readonly open: OpenFence | undefined
}

/** The best cut of `rest` for a part body of at most `budget` characters (closing line included). */
function chooseCut(rest: string, budget: number, start: OpenFence | undefined, limit: number): Cut {
  const suffix = (fence: OpenFence | undefined): number =>
    fence !== undefined && carries(fence, limit) ? fence.length + 1 : 0
  const half = budget / 2
  let paragraph: Cut | undefined
  let fencedParagraph: Cut | undefined
  let line: Cut | undefined
  let state = start
  let position = 0
  while (position < rest.length) {
    const newline = rest.indexOf('\n', position)
    if (newline === -1 || newline > budget) break
    const current = rest.slice(position, newline)
    const before = state
    state = nextFence(state, current)
    const nextLineEnd = rest.indexOf('\n', newline + 1)
    const following = rest.slice(newline + 1, nextLineEnd === -1 ? rest.length : nextLineEnd)
    // A part never ends on a blank line, nor with a fence it has just opened (an empty code block).
    const usable =
      current.trim() !== '' &&
      !(before === undefined && state !== undefined) &&
      newline + suffix(state) <= budget
    if (usable) {
      const cut: Cut = { end: newline, next: skipBlankLines(rest, newline + 1), open: state }
      line = cut
      const blankFollows = nextLineEnd !== -1 && following.trim() === ''
      if (newline >= half) {
        if (
          state === undefined &&
          (blankFollows || before !== undefined || nextFence(undefined, following) !== undefined)
        )
          paragraph = cut
        else if (state !== undefined && blankFollows) fencedParagraph = cut
      }
    }
    position = newline + 1
  }
  const best = paragraph ?? fencedParagraph ?? line
  if (best !== undefined) return best
  return hardCut(rest, budget, start, suffix)
}

/** A cut in the middle of a line: the text up to the budget, less the fence's closing line. */
function hardCut(
  rest: string,
  budget: number,
  start: OpenFence | undefined,
  suffix: (fence: OpenFence | undefined) => number,
): Cut {
  let end = budget
  let state = fenceAt(rest, end, start)
  for (let round = 0; round < 8; round++) {
    // A line that starts like a fence is not cut in two (a piece of it may read otherwise): cut before it.
    if (state.lineStart > 0 && state.lineStart < end && startsLikeFence(rest, state.lineStart))
      end = state.lineStart
    // The closing line shortens the part, which may move the cut before the fence opened: settle it.
    else if (end + suffix(state.open) > budget) end = Math.max(1, budget - suffix(state.open))
    else break
    state = fenceAt(rest, end, start)
  }
  // A high surrogate at the cut belongs with its low half in the next part.
  if (end > 1 && isHighSurrogate(rest.charCodeAt(end - 1))) end -= 1
  // Text after the cut that would read as a fence at the next part's start moves back, within the line.
  while (end - 1 > state.lineStart && startsLikeFence(rest, end)) {
    end -= 1
    if (end > 1 && isHighSurrogate(rest.charCodeAt(end - 1))) end -= 1
  }
  return { end, next: end, open: state.open }
}

/**
 * The fence open for the text after a cut at `end`, and where the line holding `end` starts. A line
 * cut in two counts whole: its rest, at the next part's start, is no line of its own.
 */
function fenceAt(
  rest: string,
  end: number,
  start: OpenFence | undefined,
): { readonly open: OpenFence | undefined; readonly lineStart: number } {
  let open = start
  let position = 0
  for (;;) {
    const newline = rest.indexOf('\n', position)
    if (newline === -1 || newline > end) {
      const lineEnd = newline === -1 ? rest.length : newline
      if (position < end) open = nextFence(open, rest.slice(position, lineEnd))
      return { open, lineStart: position }
    }
    open = nextFence(open, rest.slice(position, newline))
    position = newline + 1
  }
}

/** The fence state after `line`, given the state before it. */
function nextFence(open: OpenFence | undefined, line: string): OpenFence | undefined {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line
  const match = FENCE_LINE.exec(text)
  const run = match?.[1]
  const info = match?.[2] ?? ''
  if (open === undefined) {
    if (run === undefined) return undefined
    // A backtick fence's info string holds no backtick (that line is inline code).
    if (run.startsWith('`') && info.includes('`')) return undefined
    return { opener: text, marker: run.charAt(0), length: run.length }
  }
  if (run?.startsWith(open.marker) && run.length >= open.length && info.trim() === '') return undefined
  return open
}

/** True when the fence is reopened and closed across parts: its two lines take at most half the limit. */
function carries(fence: OpenFence, limit: number): boolean {
  return fence.opener.length + fence.length + 2 <= Math.floor(limit / 2)
}

function closer(fence: OpenFence): string {
  return fence.marker.repeat(fence.length)
}

/** The index after the line break at `from - 1` and any blank lines that follow it. */
function skipBlankLines(text: string, from: number): number {
  let position = from
  for (;;) {
    const newline = text.indexOf('\n', position)
    if (newline === -1 || text.slice(position, newline).trim() !== '') return position
    position = newline + 1
  }
}

function startsLikeFence(text: string, index: number): boolean {
  FENCE_START.lastIndex = index
  return FENCE_START.test(text)
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}
