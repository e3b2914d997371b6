import { CronError } from './errors.js'
import type { PingPhase } from './ports.js'

/** Longest accepted `pingUrl`. */
export const MAX_PING_URL_CHARS = 2048

/** Why a `pingUrl` was refused, in `CronError.data.reason` (with `data.field: 'ping_url'`). */
export type PingUrlProblem =
  | 'not_text'
  | 'too_long'
  | 'not_a_url'
  | 'scheme'
  | 'credentials'
  | 'fragment'
  | 'no_host'
  | 'control_characters'

function refuse(reason: PingUrlProblem, message: string): CronError {
  return new CronError('CRON_INVALID_INPUT', `ping_url ${message}`, { data: { field: 'ping_url', reason } })
}

/**
 * Checks a job's dead-man monitor URL and returns it normalised (as `URL.href`), or null when
 * none is given (`undefined`, `null` or `''`, which also clears it on update). Accepted: an
 * absolute `http:` or `https:` URL of at most {@link MAX_PING_URL_CHARS} characters, with a host,
 * without user name or password (a URL is shown in listings and approval prompts: put no secret in
 * it) and without a `#fragment`. Throws `CRON_INVALID_INPUT` with `data: { field: 'ping_url',
 * reason }` ({@link PingUrlProblem}); the message never repeats the URL.
 * @example checkPingUrl('https://hc-ping.com/0b6a…') // 'https://hc-ping.com/0b6a…'
 */
export function checkPingUrl(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null
  if (typeof value !== 'string') throw refuse('not_text', 'must be a string: an http(s) URL.')
  const text = value.trim()
  if (text.length > MAX_PING_URL_CHARS) {
    throw refuse('too_long', `is longer than ${MAX_PING_URL_CHARS} characters.`)
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f\s]/.test(text)) {
    throw refuse('control_characters', 'must not contain spaces or control characters.')
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw refuse(
      'not_a_url',
      'is not a URL: give an absolute http(s) URL such as https://hc-ping.com/<uuid>.',
    )
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse('scheme', `must use http or https (got "${url.protocol.slice(0, 20)}").`)
  }
  if (url.hostname === '') throw refuse('no_host', 'must name a host.')
  if (url.username !== '' || url.password !== '') {
    throw refuse(
      'credentials',
      'must not carry a user name or password: it is shown in job listings and approval prompts.',
    )
  }
  if (url.hash !== '' || text.includes('#')) throw refuse('fragment', 'must not have a #fragment.')
  if (url.href.length > MAX_PING_URL_CHARS) {
    throw refuse('too_long', `is longer than ${MAX_PING_URL_CHARS} characters.`)
  }
  return url.href
}

/**
 * The URL a ping of `phase` requests, following healthchecks.io: `<url>/start` when a run starts,
 * `<url>` when it completed, `<url>/fail` when it failed, timed out or was cancelled. The suffix
 * goes at the end of the path, before any query (`https://hc/x?rid=1` → `https://hc/x/start?rid=1`);
 * a trailing `/` of the path is not doubled.
 */
export function pingUrlFor(url: string, phase: PingPhase): string {
  if (phase === 'success') return url
  const target = new URL(url)
  const path = target.pathname.replace(/\/+$/, '')
  target.pathname = `${path}/${phase === 'start' ? 'start' : 'fail'}`
  return target.href
}
