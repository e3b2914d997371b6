/** Epoch milliseconds (or undefined/null) as an ISO string, or null. */
export function isoTime(value: number | null | undefined): string | null {
  return value === undefined || value === null || !Number.isFinite(value)
    ? null
    : new Date(value).toISOString()
}

/** A bounded, non-empty identifier parameter (id or name). */
export const ID_MAX_LENGTH = 128
