import { readFileSync, statSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import type { ConfigIssue } from './errors.js'

/**
 * The variables that hold secrets. Each can be given three ways (issue 21): its value
 * (`LANGO_API_TOKEN=…`), a file holding it (`LANGO_API_TOKEN_FILE=/run/secrets/token`: Docker and
 * Kubernetes secrets), or a systemd credential of the variable's name (`LoadCredential=LANGO_API_TOKEN:…`
 * puts it in `$CREDENTIALS_DIRECTORY/LANGO_API_TOKEN`). The last two never put the value in an
 * environment block; a value that does arrive in the environment is handed to the real server over
 * a pipe by `lango serve`/`lango mcp` (src/cli/handover.ts), so no process above the commands it
 * runs holds it there.
 */
export const SECRET_VARIABLES = [
  'LANGO_PASSPHRASE',
  'LANGO_API_TOKEN',
  'LANGO_MODEL_API_KEY',
  'LANGO_TELEGRAM_TOKEN',
  'LANGO_SLACK_TOKEN',
  'LANGO_DISCORD_TOKEN',
  'LANGO_WEBHOOK_SECRET',
  'LANGO_DATABASE_URL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
] as const

/**
 * Variables that hold a URL, which holds a secret when it carries a password, a credential-named
 * query parameter (`?password=`, `?token=`) or, for the webhook URL, a path (Slack's and Discord's
 * incoming webhooks are their path). Such a value is handed over like a secret variable.
 */
export const URL_VARIABLES = [
  'LANGO_DATABASE_URL',
  'LANGO_MODEL_BASE_URL',
  'LANGO_TELEGRAM_API_URL',
  'LANGO_SLACK_API_URL',
  'LANGO_DISCORD_API_URL',
  'LANGO_WEBHOOK_URL',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
] as const

/** Query parameters that carry credentials (`?password=` in a Postgres URL, `?token=`). */
export const SECRET_PARAMETER = /pass|secret|token|key|auth|sig/i

/** Whether URL variable `variable`'s `value` carries a credential (see {@link URL_VARIABLES}). */
export function urlHoldsSecret(variable: string, value: string): boolean {
  const url = URL.parse(value)
  if (url === null) return false
  if (url.password !== '') return true
  for (const name of url.searchParams.keys()) if (SECRET_PARAMETER.test(name)) return true
  return variable === 'LANGO_WEBHOOK_URL' && url.pathname.length > 1
}

/** A path that names a descriptor of this process: `/dev/fd/20`, `/proc/self/fd/20`. */
export const DESCRIPTOR_PATH = /^\/(?:dev|proc\/self)\/fd\/\d+$/

/** A secret file larger than this is refused unread: a token or a passphrase is small. */
const MAX_SECRET_FILE_BYTES = 64 * 1024

/**
 * The text of secret `variable` and the key to blame if it is invalid: the variable's own value,
 * else the file `<variable>_FILE` names, else `$CREDENTIALS_DIRECTORY/<variable>`. One trailing
 * newline of a file is dropped (editors add it). Both a value and a `_FILE` is an issue, as is a
 * file that cannot be read; an unset secret is undefined.
 */
export function secretText(
  env: NodeJS.ProcessEnv,
  variable: string,
  issues: ConfigIssue[],
): { text: string; key: string } | undefined {
  const value = env[variable]
  const fileVariable = `${variable}_FILE`
  const file = env[fileVariable]
  const hasValue = value !== undefined && value !== ''
  const hasFile = file !== undefined && file !== ''
  if (hasValue && hasFile) {
    issues.push({ key: fileVariable, message: `set ${variable} or ${fileVariable}, not both` })
    return undefined
  }
  if (hasValue) return { text: value, key: variable }
  if (hasFile) {
    if (!isAbsolute(file)) {
      issues.push({ key: fileVariable, message: 'expected an absolute path to a file holding the secret' })
      return undefined
    }
    const text = readSecretFile(file, fileVariable, issues)
    return text === undefined ? undefined : { text, key: fileVariable }
  }
  const credentials = env.CREDENTIALS_DIRECTORY
  if (credentials !== undefined && credentials !== '' && isAbsolute(credentials)) {
    const credential = join(credentials, variable)
    if (!existsAsFile(credential)) return undefined
    const key = `$CREDENTIALS_DIRECTORY/${variable}`
    const text = readSecretFile(credential, key, issues)
    return text === undefined ? undefined : { text, key }
  }
  return undefined
}

function existsAsFile(file: string): boolean {
  try {
    return statSync(file).isFile()
  } catch {
    return false
  }
}

/** The file's text without one trailing newline; problems become issues that name `key`, never the content. */
export function readSecretFile(file: string, key: string, issues: ConfigIssue[]): string | undefined {
  const descriptor = DESCRIPTOR_PATH.test(file)
  let bytes: Buffer
  try {
    const info = statSync(file)
    if (!info.isFile()) {
      issues.push({
        key,
        message: `${file} is not a regular file${descriptor ? " (a descriptor is read only when it is open on a file, not a pipe such as bash's <(…))" : ''}`,
      })
      return undefined
    }
    if (info.size > MAX_SECRET_FILE_BYTES) {
      issues.push({ key, message: `${file} is larger than 64 KiB: expected a file holding one secret` })
      return undefined
    }
    bytes = readFileSync(file)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error'
    issues.push({
      key,
      message: `${file} cannot be read (${code})${descriptor ? ': lango serve, lango mcp and lango workflow run --local close the descriptors they inherit unless one is open on a file; name the file by its path' : ''}`,
    })
    return undefined
  }
  const text = bytes.toString('utf8').replace(/\r?\n$/, '')
  if (text === '') {
    issues.push({ key, message: `${file} is empty: expected the secret` })
    return undefined
  }
  return text
}
