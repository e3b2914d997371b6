/** Cuts `text` to at most `maxLength` UTF-16 units without splitting a surrogate pair. */
function cut(text: string, maxLength: number): string {
  let end = maxLength
  const code = text.charCodeAt(end - 1)
  if (end > 0 && code >= 0xd800 && code <= 0xdbff) end -= 1
  return text.slice(0, end)
}

/**
 * Caps stored text: `text` itself when it fits, else at most `maxLength` characters of it followed
 * by a marker saying how many characters were dropped.
 */
export function capText(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text
  const kept = cut(text, maxLength)
  return `${kept}\n[… truncated ${text.length - kept.length} characters]`
}

/** A one-line excerpt for notices: whitespace collapsed, at most `maxLength` characters plus an ellipsis. */
export function excerpt(text: string, maxLength: number): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= maxLength ? line : `${cut(line, maxLength).trimEnd()}…`
}

/** A short human duration: `850ms`, `2.5s`, `4m 10s`, `1h 30m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return 'no limit'
  const value = Math.max(0, Math.round(ms))
  if (value < 1000) return `${value}ms`
  if (value < 60_000) return `${Number((value / 1000).toFixed(1))}s`
  const totalSeconds = Math.round(value / 1000)
  const hours = Math.floor(totalSeconds / 3600)
  const minutes = Math.floor((totalSeconds % 3600) / 60)
  const seconds = totalSeconds % 60
  if (hours > 0) return minutes > 0 ? `${hours}h ${minutes}m` : `${hours}h`
  return seconds > 0 ? `${minutes}m ${seconds}s` : `${minutes}m`
}
