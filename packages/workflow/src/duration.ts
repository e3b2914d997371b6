import { readDuration } from '@lango/duration'

/**
 * Reads a duration in the one grammar of ADR 0013 (`500ms`, `10s`, `5m`, `1h30m`, `1.5h`, `2d`)
 * as whole milliseconds. Returns `undefined` for anything else: a bare number has no unit and is
 * rejected on purpose (is `30` seconds or milliseconds?).
 */
export function parseDuration(text: string): number | undefined {
  const reading = readDuration(text)
  return reading.ok ? reading.milliseconds : undefined
}

/** The message for a duration without a unit (a YAML number, or a quoted one). Quotes nothing. */
export const DURATION_UNIT_MISSING =
  'has no unit: a bare number could be seconds or milliseconds; write it with one, such as 30s, 5m, 1h30m or 500ms'

/** Formats milliseconds for messages: `1500` → `1.5s`, `300000` → `5m`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))}s`
  if (ms < 3_600_000) return `${Number((ms / 60_000).toFixed(1))}m`
  return `${Number((ms / 3_600_000).toFixed(1))}h`
}
