/**
 * Splits `text` into messages of at most `limit` UTF-16 code units (what Telegram's 4096 and
 * Discord's 2000 count, or fewer), breaking between lines; a single line longer than `limit` is cut
 * hard (never inside a surrogate pair). Blank parts are dropped: services refuse empty messages.
 * Joining the parts with `\n` gives the text back when no line was cut and none was blank.
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError('limit must be an integer of at least 2')
  const parts: string[] = []
  let current: string | undefined
  for (const line of text.split('\n')) {
    if (line.length > limit) {
      if (current !== undefined) parts.push(current)
      const pieces = cutHard(line, limit)
      parts.push(...pieces.slice(0, -1))
      current = pieces.at(-1)
      continue
    }
    if (current === undefined) current = line
    else if (current.length + 1 + line.length <= limit) current = `${current}\n${line}`
    else {
      parts.push(current)
      current = line
    }
  }
  if (current !== undefined) parts.push(current)
  return parts.filter((part) => part.trim() !== '')
}

function cutHard(line: string, limit: number): string[] {
  const pieces: string[] = []
  let start = 0
  while (start < line.length) {
    let end = Math.min(start + limit, line.length)
    // A high surrogate at the cut belongs with its low half in the next piece.
    if (end < line.length && isHighSurrogate(line.charCodeAt(end - 1))) end -= 1
    pieces.push(line.slice(start, end))
    start = end
  }
  return pieces
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}
