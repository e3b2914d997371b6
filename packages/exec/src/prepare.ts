import { statSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import { createEnvBuilder, type EnvOverrideSource, type EnvPolicy } from './env.js'
import { ExecError } from './errors.js'
import { locateRefTokens } from './guard/index.js'
import type { RefStore } from './ports.js'
import { MARKER_VARIABLE, newMarker } from './proc.js'
import { MIN_SECRET_LENGTH, Redactor } from './redact.js'

/** Options shared by every way of spawning a command. */
export interface SpawnOptions {
  /** Working directory; must exist and be a directory, else `EXEC_INVALID_CWD` before spawning. */
  readonly cwd?: string
  /** Variables merged over the filtered base environment (or replacing it, with `replaceEnv`). */
  readonly env?: Readonly<Record<string, string>>
  /** `agent` (default) applies the stricter override checks of SECURITY.md ENV-3. */
  readonly envSource?: EnvOverrideSource
  /** Start from an empty environment instead of the filtered parent environment. */
  readonly replaceEnv?: boolean
  /** Inheritance policy; see {@link EnvPolicy}. */
  readonly envPolicy?: EnvPolicy
  /** Resolves `{{secret:…}}` / `{{decrypt:…}}` tokens right before spawning. */
  readonly refStore?: RefStore
  /** The shell that runs the command (default `/bin/sh`). */
  readonly shell?: string
}

/** What the spawners need: never leaves this package, never logged. */
export interface PreparedSpawn {
  readonly shell: string
  readonly args: readonly string[]
  readonly cwd: string
  readonly env: Record<string, string>
  readonly redactor: Redactor
  /** Inherited variable names that were filtered out (for audit logs; names only). */
  readonly droppedEnv: readonly string[]
  /** This spawn's marker, in the child's environment as `__LANGO_RUN`: finds descendants that left the group. */
  readonly marker: string
}

type EnvBuilder = ReturnType<typeof createEnvBuilder>
const defaultEnvBuilder = createEnvBuilder()
const compiledPolicies = new WeakMap<EnvPolicy, EnvBuilder>()

/** A policy's compiled builder, made once per policy object rather than on every spawn. */
function envBuilderFor(policy: EnvPolicy | undefined): EnvBuilder {
  if (policy === undefined) return defaultEnvBuilder
  let builder = compiledPolicies.get(policy)
  if (builder === undefined) {
    builder = createEnvBuilder(policy)
    compiledPolicies.set(policy, builder)
  }
  return builder
}

/** Name of the variable that carries the n-th resolved value; outside every deny rule on purpose. */
function referenceVariable(index: number): string {
  return `__LANGO_REF_${index}`
}

const TOKEN_PATTERN = /\{\{(secret|decrypt):([^}]+)\}\}/g
const MAX_COMMAND_LENGTH = 256 * 1024

async function resolveToken(refStore: RefStore, token: string): Promise<string | undefined> {
  const value = await refStore.resolve(token)
  return typeof value === 'string' ? value : undefined
}

/**
 * Rewrites reference tokens to shell variable expansions and resolves their values into the
 * child's environment (SECURITY.md SEC-2): the value never appears in argv and cannot change
 * the command's syntax. Tokens the store does not know stay literal.
 */
async function bindReferences(
  command: string,
  refStore: RefStore | undefined,
  redactor: Redactor,
): Promise<{ shellCommand: string; referenceEnv: Record<string, string> }> {
  const referenceEnv: Record<string, string> = {}
  if (refStore === undefined || !command.includes('{{')) return { shellCommand: command, referenceEnv }
  const variables = new Map<string, string | undefined>()
  let rewritten = ''
  let cursor = 0
  for (const location of locateRefTokens(command)) {
    if (!variables.has(location.text)) {
      const value = await resolveToken(refStore, location.text)
      let variable: string | undefined
      if (value !== undefined) {
        variable = referenceVariable(variables.size)
        referenceEnv[variable] = value
        redactor.add(value, location.name)
      }
      variables.set(location.text, variable)
    }
    const variable = variables.get(location.text)
    if (variable === undefined || location.context === 'comment') continue
    if (
      location.context === 'single-quoted' ||
      location.context === 'ansi-c' ||
      location.context === 'quoted-heredoc'
    ) {
      throw new ExecError(
        'EXEC_SECRET_IN_QUOTES',
        `secret reference {{${location.kind}:${location.name}}} is inside ${location.context} text, where the shell cannot expand it; move it outside single quotes (for example "…{{${location.kind}:${location.name}}}…")`,
        { data: { token: location.text, context: location.context } },
      )
    }
    const expansion = location.context === 'unquoted' ? `"\${${variable}}"` : `\${${variable}}`
    rewritten += command.slice(cursor, location.start) + expansion
    cursor = location.end
  }
  return { shellCommand: rewritten + command.slice(cursor), referenceEnv }
}

async function resolveOverrideValues(
  env: Readonly<Record<string, string>> | undefined,
  refStore: RefStore | undefined,
  redactor: Redactor,
): Promise<Record<string, string>> {
  const resolved: Record<string, string> = {}
  if (env === undefined || refStore === undefined) return resolved
  for (const [name, value] of Object.entries(env)) {
    if (!value.includes('{{')) continue
    let result = ''
    let cursor = 0
    for (const match of value.matchAll(TOKEN_PATTERN)) {
      const secret = await resolveToken(refStore, match[0])
      result += value.slice(cursor, match.index)
      if (secret === undefined) result += match[0]
      else {
        result += secret
        redactor.add(secret, match[2] as string)
      }
      cursor = (match.index as number) + match[0].length
    }
    resolved[name] = result + value.slice(cursor)
  }
  return resolved
}

/**
 * Checks that `cwd` is a usable directory, before anything is spawned: a non-empty string without
 * NUL that names an existing directory (symlinks followed, loops refused). Synchronous on purpose:
 * a stat takes microseconds, while a thread-pool round trip costs ~0.15 ms per command.
 */
export function checkWorkingDirectory(cwd: unknown): string {
  // The host's own working directory exists by definition (or process.cwd() throws).
  if (cwd === undefined) return process.cwd()
  if (typeof cwd !== 'string' || cwd === '' || cwd.includes('\0'))
    throw new ExecError('EXEC_INVALID_CWD', 'working directory must be a non-empty path string without NUL', {
      data: { type: typeof cwd },
    })
  const directory = resolvePath(cwd)
  let info: ReturnType<typeof statSync>
  try {
    info = statSync(directory, { throwIfNoEntry: false })
  } catch (error) {
    // ELOOP (a symlink loop), ENOTDIR (a file on the way), EACCES, ENAMETOOLONG …
    const code = (error as NodeJS.ErrnoException).code
    throw new ExecError('EXEC_INVALID_CWD', `working directory is not usable (${code}): ${directory}`, {
      data: { cwd: directory, code },
    })
  }
  if (info === undefined)
    throw new ExecError('EXEC_INVALID_CWD', `working directory does not exist: ${directory}`, {
      data: { cwd: directory },
    })
  if (!info.isDirectory())
    throw new ExecError('EXEC_INVALID_CWD', `working directory is not a directory: ${directory}`, {
      data: { cwd: directory },
    })
  return directory
}

/** Validates options and builds argv, env and the redactor. Nothing is spawned here. */
export async function prepareSpawn(
  command: string,
  options: SpawnOptions & { readonly pty?: boolean },
): Promise<PreparedSpawn> {
  if (typeof command !== 'string' || command.trim() === '')
    throw new ExecError('EXEC_INVALID_OPTION', 'command must be a non-empty string')
  if (command.length > MAX_COMMAND_LENGTH || command.includes('\0'))
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `command must be at most ${MAX_COMMAND_LENGTH} characters with no NUL`,
    )
  const cwd = checkWorkingDirectory(options.cwd)
  const redactor = new Redactor()
  const held = options.refStore?.heldValues?.()
  // Held values too short to mask are skipped here (masking them would reveal them); they are
  // refused with EXEC_SECRET_TOO_SHORT wherever a command references them.
  if (held !== undefined)
    for (const entry of held)
      if (typeof entry.value === 'string' && entry.value.length >= MIN_SECRET_LENGTH)
        redactor.add(entry.value, entry.label)
  // Overrides are validated as written (a credential-named key must hold only a reference
  // token), then their tokens are resolved into the finished environment.
  const { env, dropped } = envBuilderFor(options.envPolicy).build({
    overrides: options.env,
    overrideSource: options.envSource ?? 'agent',
    replace: options.replaceEnv === true,
    pty: options.pty === true,
  })
  Object.assign(env, await resolveOverrideValues(options.env, options.refStore, redactor))
  const { shellCommand, referenceEnv } = await bindReferences(command, options.refStore, redactor)
  Object.assign(env, referenceEnv)
  const marker = newMarker()
  env[MARKER_VARIABLE] = marker
  return {
    shell: options.shell ?? '/bin/sh',
    args: ['-c', shellCommand],
    cwd,
    env,
    redactor,
    droppedEnv: dropped,
    marker,
  }
}
