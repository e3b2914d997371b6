import { CronError } from './errors.js'

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
}

const DURATION_PATTERN = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$/
const PART_PATTERN = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g

/** Human description of the accepted duration forms, used in error messages. */
export const DURATION_FORMS =
  'a duration such as "90s", "5m", "1h30m", "2d" or "@every 5m" (units ms, s, m, h, d, w), or a whole number of milliseconds'

/**
 * Parses a duration: `90s`, `5m`, `1h30m`, `2d`, `1.5h`, `@every 5m`, or a bare integer (milliseconds).
 * Returns whole milliseconds; throws `CRON_INVALID_SCHEDULE` for anything else.
 * @example parseDuration('1h30m') // 5_400_000
 */
export function parseDuration(text: string | number): number {
  if (typeof text === 'number') {
    if (Number.isSafeInteger(text) && text > 0) return text
    throw new CronError(
      'CRON_INVALID_SCHEDULE',
      `A duration must be a positive whole number of milliseconds or ${DURATION_FORMS}.`,
      {
        data: { value: text },
      },
    )
  }
  let value = text.trim().toLowerCase()
  if (value.startsWith('@every')) value = value.slice('@every'.length).trim()
  value = value.replace(/\s+/g, '')
  if (/^\d+$/.test(value)) {
    const milliseconds = Number(value)
    if (Number.isSafeInteger(milliseconds) && milliseconds > 0) return milliseconds
  } else if (value.length > 0 && value.length <= 64 && DURATION_PATTERN.test(value)) {
    let total = 0
    for (const match of value.matchAll(PART_PATTERN)) {
      total += Number(match[1]) * (UNIT_MS[match[2] as string] as number)
    }
    const milliseconds = Math.round(total)
    if (Number.isSafeInteger(milliseconds) && milliseconds > 0) return milliseconds
  }
  throw new CronError(
    'CRON_INVALID_SCHEDULE',
    `Cannot read "${text.slice(0, 64)}" as a duration; expected ${DURATION_FORMS}.`,
    {
      data: { value: text.slice(0, 200) },
    },
  )
}

/** Formats milliseconds compactly: `90000` → `1m30s`, `500` → `500ms`. */
export function formatDuration(milliseconds: number): string {
  if (milliseconds < 1000) return `${Math.round(milliseconds)}ms`
  let rest = Math.round(milliseconds / 1000)
  const parts: string[] = []
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`)
      rest %= size
    }
  }
  return parts.join('')
}
