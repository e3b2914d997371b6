// @ts-check
/**
 * The dashboard's reading of `every` intervals, in words. It reads the stored text with the server's
 * own grammar: `readDuration` of @lango/duration, which the server serves by its source as
 * `/ui/duration.js` (ADR 0013), so the page can never read a duration differently from the server.
 */
import { readDuration } from './duration.js'

/** @type {[string, number][]} */
const INTERVAL_UNITS = [
  ['week', 604800000],
  ['day', 86400000],
  ['hour', 3600000],
  ['minute', 60000],
  ['second', 1000],
  ['millisecond', 1],
]

/** 'every 1 hour 30 minutes' for the stored text of an every job; '' when it does not read. */
export function describeEvery(text) {
  // Read as the server reads a stored interval: white space dropped, and a bare number (stored
  // before ADR 0013) is milliseconds.
  const compact = String(text)
    .replace(/\s+/g, '')
    .replace(/^@every/i, '')
  const reading = /^\d+$/.test(compact) ? { ok: true, milliseconds: Number(compact) } : readDuration(compact)
  if (!reading.ok || reading.milliseconds <= 0) return ''
  const parts = []
  let rest = reading.milliseconds
  for (const [name, size] of INTERVAL_UNITS) {
    const amount = Math.floor(rest / size)
    if (amount === 0) continue
    parts.push(`${amount} ${name}${amount === 1 ? '' : 's'}`)
    rest -= amount * size
  }
  return `every ${parts.length === 1 && parts[0].startsWith('1 ') ? parts[0].slice(2) : parts.join(' ')}`
}
