const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g

/**
 * Parses a duration such as `500ms`, `10s`, `5m`, `1h30m` or `2d` into whole milliseconds.
 * Returns `undefined` for anything else: a bare number has no unit and is rejected on purpose
 * (is `30` seconds or milliseconds?).
 */
export function parseDuration(text: string): number | undefined {
  if (text.length === 0 || text.length > 32 || !DURATION.test(text)) return undefined
  let total = 0
  for (const match of text.matchAll(PART)) total += Number(match[1]) * (UNIT_MS[match[2] as string] as number)
  return Number.isFinite(total) ? Math.round(total) : undefined
}

/** Formats milliseconds for messages: `1500` → `1.5s`, `300000` → `5m`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))}s`
  if (ms < 3_600_000) return `${Number((ms / 60_000).toFixed(1))}m`
  return `${Number((ms / 3_600_000).toFixed(1))}h`
}
