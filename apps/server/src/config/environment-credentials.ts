import { existsSync } from 'node:fs'
import http from 'node:http'
import { isCredentialEnv } from '@lango/exec'
import { SECRET_VARIABLES, URL_VARIABLES, urlHoldsSecret } from './secret-sources.js'

/**
 * Which variables of an environment hold a secret: lango's own ({@link secretsIn}) and other tools'
 * credentials ({@link credentialsIn}). `lango serve` hands both over to its server rather than leave
 * them in an environment block (`cli/handover.ts`), and the output masker masks what they hold
 * (`environmentSecrets` in `redact.ts`).
 */

/**
 * The secret variables set in `env`, and the URL variables whose value carries a credential (a
 * password, a credential-named query parameter, a webhook URL's path): a database URL without one
 * is not a secret.
 */
export function secretsIn(env: NodeJS.ProcessEnv): Record<string, string> {
  const found: Record<string, string> = {}
  const urls: readonly string[] = URL_VARIABLES
  for (const variable of new Set<string>([...SECRET_VARIABLES, ...URL_VARIABLES])) {
    const value = env[variable]
    if (value === undefined || value === '') continue
    if (urls.includes(variable) && !urlHoldsSecret(variable, value)) continue
    found[variable] = value
  }
  return found
}

/**
 * The other variables of `env` that hold a credential by `@lango/exec`'s rule (`isCredentialEnv`):
 * names such as `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `PGPASSWORD`, or a URL with a password as
 * the value. lango's own variables are {@link secretsIn}'s. Left out, because the value is not the
 * secret but where it is ({@link pointsAtCredential}): `SSH_AUTH_SOCK`, `SSL_KEY_FILE`,
 * `GOOGLE_APPLICATION_CREDENTIALS=/home/op/key.json`; commands never get those either (exec's
 * environment rule), but moving them would start a supervisor for every SSH or desktop session.
 * Also left: a proxy URL Node itself reads at start (`NODE_USE_ENV_PROXY=1`) when this Node
 * cannot apply it later ({@link proxyStaysInPlace}).
 */
export function credentialsIn(
  env: NodeJS.ProcessEnv,
  runtime: NodeRuntime = THIS_NODE,
): Record<string, string> {
  const own = new Set<string>([...SECRET_VARIABLES, ...URL_VARIABLES])
  const keepProxy = proxyStaysInPlace(env, runtime)
  const found: Record<string, string> = {}
  for (const [variable, value] of Object.entries(env)) {
    if (value === undefined || value === '' || own.has(variable) || variable.startsWith('LANGO_')) continue
    if (!isCredentialEnv(variable, value) || pointsAtCredential(variable, value)) continue
    if (keepProxy && PROXY_VARIABLE.test(variable)) continue
    found[variable] = value
  }
  return found
}

/** Names of variables that say where a credential is (a socket, a file, a directory), not what it is. */
const POINTER_NAME = /_(?:SOCK|SOCKET|FILE|PATH|DIR|DIRECTORY|CONTROL|LOCATION)$/i

/**
 * Whether `variable` points at a credential rather than holding one: its value is a path (`/…`,
 * `./…`, `~/…`) and either its name says so (ends in `_SOCK`, `_FILE`, `_PATH`, `_DIR`, …:
 * `SSH_AUTH_SOCK`, `GNOME_KEYRING_CONTROL`) or the path exists
 * (`GOOGLE_APPLICATION_CREDENTIALS=/home/op/key.json`). A value that is not a path is what it is,
 * whatever the name (`REGISTRY_LOCATION=https://bot:pw@…`, `GITHUB_TOKEN_PATH=ghp_…`), and a path
 * that names nothing on disk under a name that does not say "path" is the credential itself (ECS's
 * `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/<id>`).
 */
function pointsAtCredential(variable: string, value: string): boolean {
  if (!/^(?:\/|\.\.?\/|~\/)/.test(value) || value.includes('\0') || value.length >= 4096) return false
  return POINTER_NAME.test(variable) || existsSync(value)
}

/** The proxy variables Node's own proxy support reads (`NO_PROXY` holds no credential). */
export const PROXY_VARIABLE = /^(?:https?|all)_proxy$/i

/** Whether Node's built-in proxy support is asked for: `NODE_USE_ENV_PROXY=1` or `--use-env-proxy`. */
export function nodeEnvProxyOn(env: NodeJS.ProcessEnv): boolean {
  const flags = [...process.execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)]
  return env.NODE_USE_ENV_PROXY === '1' || flags.includes('--use-env-proxy')
}

/** `http.setGlobalProxyFromEnv`, where this Node has it (24.21 does, 20 does not): applies proxy variables set after start. */
export const setGlobalProxyFromEnv = (http as { setGlobalProxyFromEnv?: () => unknown }).setGlobalProxyFromEnv

/** What of the Node running decides whether a proxy URL can be handed over. */
export interface NodeRuntime {
  /** `process.versions.node`. */
  readonly version: string
  /** Whether it has `http.setGlobalProxyFromEnv`. */
  readonly appliesProxyLater: boolean
}

const THIS_NODE: NodeRuntime = {
  version: process.versions.node,
  appliesProxyLater: typeof setGlobalProxyFromEnv === 'function',
}

/**
 * Whether a proxy URL with a password stays in the server's start-up environment: Node's built-in
 * proxy support (Node 22.21 and later) reads it when the process starts, so a server started without it
 * would send its requests (the model, the chat platforms) past the proxy, unless this Node can apply
 * it after the handover (`http.setGlobalProxyFromEnv`). `lango serve` warns when this holds
 * ({@link proxiesKeptInPlace}).
 */
function proxyStaysInPlace(env: NodeJS.ProcessEnv, runtime: NodeRuntime): boolean {
  if (!nodeEnvProxyOn(env) || runtime.appliesProxyLater) return false
  const [major = 0, minor = 0] = runtime.version.split('.').map(Number)
  return major > 22 || (major === 22 && minor >= 21)
}

/** The proxy variables with a credential that {@link credentialsIn} leaves in `env` (see {@link proxyStaysInPlace}). */
export function proxiesKeptInPlace(env: NodeJS.ProcessEnv, runtime: NodeRuntime = THIS_NODE): string[] {
  if (!proxyStaysInPlace(env, runtime)) return []
  return Object.keys(env).filter(
    (variable) => PROXY_VARIABLE.test(variable) && isCredentialEnv(variable, env[variable] ?? ''),
  )
}
