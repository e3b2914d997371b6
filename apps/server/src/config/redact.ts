import type { ServerConfig } from './types.js'

/** Shown in place of a token, API key or password that is set. */
const SET = '[set]'
/** Keys whose values are secrets: shown as `[set]`, or `null` when not set. */
const SECRET_KEYS = new Set(['apiToken', 'apiKey', 'token', 'secret'])
/** Keys whose values are URLs: credentials in them are hidden. */
const URL_KEYS = new Set(['url', 'baseUrl', 'apiUrl'])
/** Query parameters that carry credentials (`?password=` in a Postgres URL, `?token=`). */
const SECRET_PARAMETER = /pass|secret|token|key|auth|sig/i

/**
 * The configuration as JSON for `lango doctor` and logs: every token and API key is `"[set]"`
 * (or `null` when not set), passwords and credential parameters in URLs are `[set]`, the webhook
 * URL keeps only its origin (its path is often the secret), and unset values are `null`.
 */
export function redactedConfig(config: ServerConfig): unknown {
  return redact(config, [])
}

function redact(value: unknown, path: readonly string[]): unknown {
  const key = path.at(-1) ?? ''
  if (SECRET_KEYS.has(key)) return value === undefined || value === null ? null : SET
  if (value === undefined || value === null) return null
  // A custom channel's options may hold its credentials: their names are shown, never their values.
  if (key === 'options' && path.at(-2) === 'custom' && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).map((name) => [name, SET]))
  }
  if (URL_KEYS.has(key) && typeof value === 'string') return redactUrl(value, path.at(-2) === 'webhook')
  if (Array.isArray(value)) return value.map((item) => redact(item, path))
  if (typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([name, child]) => [name, redact(child, [...path, name])]),
    )
  }
  return value
}

/** Hides the password and credential parameters of a URL; a file path (SQLite) is returned as is. */
function redactUrl(text: string, hidePath: boolean): string {
  const url = URL.parse(text)
  if (url === null || !/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text
  if (hidePath) return url.pathname === '/' && url.search === '' ? url.origin : `${url.origin}/${SET}`
  let changed = false
  if (url.password !== '') {
    url.password = SET
    changed = true
  }
  for (const name of new Set(url.searchParams.keys())) {
    if (SECRET_PARAMETER.test(name)) {
      url.searchParams.set(name, SET)
      changed = true
    }
  }
  // The URL encodes the brackets; show the marker as written elsewhere.
  return changed ? url.href.replaceAll(encodeURIComponent(SET), SET) : text
}
