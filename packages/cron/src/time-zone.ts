import { CronError } from './errors.js'

const DAY_MS = 86_400_000
const FORMAT_PATTERN = /^(\d{2})\/(\d{2})\/(-?\d{4,6}), (\d{2}):(\d{2}):(\d{2})$/

/**
 * Resolves an IANA time zone name to its canonical spelling (`asia/kolkata` → `Asia/Kolkata`),
 * or throws `CRON_INVALID_TIMEZONE`.
 */
export function resolveTimeZone(timeZone: string): string {
  const trimmed = typeof timeZone === 'string' ? timeZone.trim() : ''
  if (trimmed.length > 0 && trimmed.length <= 64 && /^[A-Za-z0-9_+\-/]+$/.test(trimmed)) {
    try {
      const resolved = new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone
      // ICU canonicalises to legacy names (Asia/Kolkata → Asia/Calcutta); keep the caller's
      // valid spelling and only fix its case when ICU lists it under the same name.
      if (resolved.toLowerCase() === trimmed.toLowerCase()) return resolved
      return knownZonesByLowerCase().get(trimmed.toLowerCase()) ?? trimmed
    } catch {
      // fall through to the error below
    }
  }
  throw unknownTimeZone(timeZone)
}

function unknownTimeZone(timeZone: unknown, cause?: unknown): CronError {
  return new CronError(
    'CRON_INVALID_TIMEZONE',
    `Unknown time zone "${String(timeZone).slice(0, 64)}". Use an IANA name such as "UTC", "Europe/Berlin", "America/New_York" or "Asia/Kolkata".`,
    { cause, data: { timezone: String(timeZone).slice(0, 200) } },
  )
}

let zonesByLowerCase: Map<string, string> | undefined

function knownZonesByLowerCase(): Map<string, string> {
  if (zonesByLowerCase === undefined) {
    zonesByLowerCase = new Map()
    for (const zone of Intl.supportedValuesOf('timeZone')) zonesByLowerCase.set(zone.toLowerCase(), zone)
  }
  return zonesByLowerCase
}

/** The host's zone, as Intl reports it. */
export function hostTimeZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone
}

/** Where a wall time falls: once, twice (fall back) or nowhere (spring gap). */
export type WallTimeResolution =
  | { readonly kind: 'unique'; readonly instant: number }
  | { readonly kind: 'repeated'; readonly earlier: number; readonly later: number }
  | { readonly kind: 'gap'; readonly firstValidInstant: number }

/**
 * Converts between instants and wall times in one zone. A wall time is expressed as "naive"
 * epoch milliseconds: the instant at which a UTC clock would show the same reading.
 */
export class ZoneCalendar {
  readonly timeZone: string
  readonly #formatter: Intl.DateTimeFormat | undefined

  constructor(timeZone: string) {
    this.timeZone = timeZone
    this.#formatter =
      timeZone === 'UTC' || timeZone === 'Etc/UTC'
        ? undefined
        : new Intl.DateTimeFormat('en-US', {
            timeZone,
            hourCycle: 'h23',
            year: 'numeric',
            month: '2-digit',
            day: '2-digit',
            hour: '2-digit',
            minute: '2-digit',
            second: '2-digit',
          })
  }

  /** Offset of the zone from UTC at `instant`, in milliseconds (wall − instant). */
  offsetAt(instant: number): number {
    if (this.#formatter === undefined) return 0
    const seconds = Math.floor(instant / 1000) * 1000
    return this.#wallSeconds(seconds) - seconds
  }

  /** The wall time (naive epoch ms) at `instant`. */
  wallAt(instant: number): number {
    return instant + this.offsetAt(instant)
  }

  /** Where the wall time `wall` falls in this zone. */
  resolve(wall: number): WallTimeResolution {
    if (this.#formatter === undefined) return { kind: 'unique', instant: wall }
    const before = this.offsetAt(wall - DAY_MS)
    const after = this.offsetAt(wall + DAY_MS)
    const candidates: number[] = []
    for (const offset of before === after ? [before] : [before, after]) {
      const instant = wall - offset
      if (this.offsetAt(instant) === offset) candidates.push(instant)
    }
    if (candidates.length === 0 && before === after) {
      // Two transitions within two days (rare historical data): fall back to the offset found.
      const guess = wall - before
      const offset = this.offsetAt(guess)
      const instant = wall - offset
      if (this.offsetAt(instant) === offset) candidates.push(instant)
    }
    candidates.sort((left, right) => left - right)
    const [first, second] = candidates
    if (first !== undefined && second !== undefined && first !== second) {
      return { kind: 'repeated', earlier: first, later: second }
    }
    if (first !== undefined) return { kind: 'unique', instant: first }
    return {
      kind: 'gap',
      firstValidInstant: this.#transitionBetween(
        wall - Math.max(before, after),
        wall - Math.min(before, after),
        after,
      ),
    }
  }

  /** Formats `instant` as ISO 8601 with this zone's offset, e.g. `2026-03-08T03:00:00-04:00`. */
  formatIso(instant: number): string {
    const offset = this.offsetAt(instant)
    const wall = new Date(instant + offset).toISOString().slice(0, 19)
    if (offset === 0) return `${wall}Z`
    const sign = offset < 0 ? '-' : '+'
    const minutes = Math.round(Math.abs(offset) / 60_000)
    const hours = Math.floor(minutes / 60)
    return `${wall}${sign}${String(hours).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`
  }

  /** Smallest instant in [low, high] whose offset is `targetOffset` (the moment the clocks jump). */
  #transitionBetween(low: number, high: number, targetOffset: number): number {
    let lowSecond = Math.floor(low / 1000)
    let highSecond = Math.ceil(high / 1000)
    while (lowSecond < highSecond) {
      const middle = Math.floor((lowSecond + highSecond) / 2)
      if (this.offsetAt(middle * 1000) === targetOffset) highSecond = middle
      else lowSecond = middle + 1
    }
    return highSecond * 1000
  }

  #wallSeconds(instant: number): number {
    const formatter = this.#formatter as Intl.DateTimeFormat
    const text = formatter.format(instant)
    const match = FORMAT_PATTERN.exec(text)
    if (match !== null) {
      return Date.UTC(
        Number(match[3]),
        Number(match[1]) - 1,
        Number(match[2]),
        Number(match[4]),
        Number(match[5]),
        Number(match[6]),
      )
    }
    const parts: Record<string, number> = {}
    for (const part of formatter.formatToParts(instant)) {
      if (part.type !== 'literal') parts[part.type] = Number(part.value)
    }
    return Date.UTC(
      parts.year ?? 1970,
      (parts.month ?? 1) - 1,
      parts.day ?? 1,
      parts.hour ?? 0,
      parts.minute ?? 0,
      parts.second ?? 0,
    )
  }
}

const calendars = new Map<string, ZoneCalendar>()

/**
 * A shared {@link ZoneCalendar} for a resolved zone name (formatters are costly to build); throws
 * `CRON_INVALID_TIMEZONE` for a name Intl does not know.
 */
export function zoneCalendar(timeZone: string): ZoneCalendar {
  let calendar = calendars.get(timeZone)
  if (calendar === undefined) {
    // Intl takes a missing zone for the host's: refuse it rather than compute in the wrong zone.
    if (typeof timeZone !== 'string' || timeZone.length === 0) throw unknownTimeZone(timeZone)
    try {
      calendar = new ZoneCalendar(timeZone)
    } catch (error) {
      if (error instanceof RangeError) throw unknownTimeZone(timeZone, error)
      throw error
    }
    if (calendars.size > 500) calendars.clear()
    calendars.set(timeZone, calendar)
  }
  return calendar
}
