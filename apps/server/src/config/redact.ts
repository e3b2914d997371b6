import { MIN_SECRET_LENGTH } from '@lango/exec'
import { SECRET_PARAMETER } from './secret-sources.js'
import type { ServerConfig } from './types.js'

/** Shown in place of a token, API key or password that is set. */
const SET = '[set]'
/** Keys whose values are secrets: shown as `[set]`, or `null` when not set. */
const SECRET_KEYS = new Set(['apiToken', 'apiKey', 'token', 'secret', 'passphrase'])
/** Keys whose values are URLs: credentials in them are hidden. */
const URL_KEYS = new Set(['url', 'baseUrl', 'apiUrl', 'tracesUrl'])

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
  // So may the OTLP exporter's headers (`authorization`, an API key).
  if (key === 'headers' && path.at(-2) === 'telemetry' && typeof value === 'object') {
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

/** A secret the configuration holds, named by where it came from (the label masked output shows). */
/**
 * The settings among `secrets` too short to mask without revealing them (SECURITY.md SEC-4), by
 * name (`server.api_token`), each once; a value that is only maybe a credential is left out.
 */
export function tooShortToMask(secrets: readonly ConfigSecret[]): string[] {
  return [
    ...new Set(
      secrets
        .filter(({ value, maybe }) => value.length < MIN_SECRET_LENGTH && maybe !== true)
        .map(({ label }) => label.replace(/^config:/, '')),
    ),
  ]
}

export interface ConfigSecret {
  readonly label: string
  readonly value: string
  /**
   * Masked in case it is a credential, though it may well not be (a webhook URL's path): one too
   * short to mask is not worth a warning.
   */
  readonly maybe?: true
}

/**
 * Other tools' credentials the server holds in its `process.env` (`AWS_SECRET_ACCESS_KEY`,
 * `GITHUB_TOKEN`, a proxy URL's password: what `lango serve` hands over to its server rather than
 * leave in an environment block), for the output masker: a command never gets them, but one that
 * reads them elsewhere (the supervisor's `/proc/<pid>/environ`, a file) shows them masked, labelled
 * `env:<NAME>`. `credentials` is the variables that hold one (`credentialsIn`, `environment-credentials.ts`).
 */
export function environmentSecrets(credentials: Readonly<Record<string, string>>): ConfigSecret[] {
  const found: ConfigSecret[] = []
  for (const [name, value] of Object.entries(credentials)) {
    const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? URL.parse(value) : null
    // A URL with a password (a proxy's): its password is the secret, the rest is an address.
    if (url !== null && url.password !== '')
      found.push({ label: `env:${name}`, value: decodeURIComponent(url.password) })
    if (url === null || url.password === '') found.push({ label: `env:${name}`, value })
  }
  return found
}

/** Option names of custom channels that hold credentials. */
const CREDENTIAL_OPTION = /token|secret|key|pass|auth|cred/i

/**
 * Every secret the configuration holds, for the output masker (SECURITY.md SEC-4; issue 21): the
 * vault's passphrase, the API token, the model key, channel tokens, the webhook secret and the
 * webhook URL's path, passwords and credential parameters in every URL, and custom channels'
 * credential-named options. A command that reads one (from `lango.yaml`, a `_FILE`, `/proc`) gets
 * it masked in every result, history row and stream.
 */
export function configSecrets(config: ServerConfig): ConfigSecret[] {
  const found: ConfigSecret[] = []
  const add = (label: string, value: string | undefined, maybe?: true): void => {
    if (value !== undefined && value !== '')
      found.push({ label, value, ...(maybe === undefined ? {} : { maybe }) })
  }
  const { channels } = config
  add('config:vault.passphrase', config.vault.passphrase)
  add('config:server.api_token', config.server.apiToken)
  add('config:model.api_key', config.model.apiKey)
  add('config:channels.telegram.token', channels.telegram.token)
  add('config:channels.slack.token', channels.slack.token)
  add('config:channels.discord.token', channels.discord.token)
  add('config:channels.webhook.secret', channels.webhook.secret)
  const urls: [string, string | undefined][] = [
    ['database.url', config.database.kind === 'postgres' ? config.database.url : undefined],
    ['model.base_url', config.model.baseUrl],
    ['channels.telegram.api_url', channels.telegram.apiUrl],
    ['channels.slack.api_url', channels.slack.apiUrl],
    ['channels.discord.api_url', channels.discord.apiUrl],
    ['channels.webhook.url', channels.webhook.url],
    ['telemetry.otlp.endpoint', config.telemetry.tracesUrl],
  ]
  for (const [key, text] of urls) {
    const url = text === undefined ? null : URL.parse(text)
    if (url === null) continue
    if (url.password !== '') add(`config:${key}`, decodeURIComponent(url.password))
    for (const [name, value] of url.searchParams)
      if (SECRET_PARAMETER.test(name)) add(`config:${key}?${name}`, value)
    // A webhook URL's path is often its credential (Slack and Discord incoming webhooks).
    if (key === 'channels.webhook.url' && url.pathname.length > 1) add(`config:${key}`, url.pathname, true)
  }
  for (const [name, value] of Object.entries(config.telemetry.headers)) {
    const label = `config:telemetry.otlp.headers.${name}`
    add(label, value)
    // As `OTEL_EXPORTER_OTLP_HEADERS` spells it (percent-encoded), and the credential of
    // `Bearer <token>` on its own: a command that prints either finds it masked.
    const encoded = encodeURIComponent(value)
    if (encoded !== value) add(label, encoded)
    const credential = /^[A-Za-z][\w.+-]* +(\S+)$/.exec(value)?.[1]
    if (credential !== undefined && credential.length >= 8) add(label, credential)
  }
  for (const channel of channels.custom)
    for (const [name, value] of Object.entries(channel.options))
      if (CREDENTIAL_OPTION.test(name) && typeof value === 'string')
        add(`config:channels.custom.${channel.name}.${name}`, value)
  return found
}
