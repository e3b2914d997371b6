import { statSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import { createEnvBuilder, type EnvOverrideSource, type EnvPolicy } from './env.js'
import { ExecError } from './errors.js'
import { locateRefTokens, rewriteRefTokens } from './guard/locate-tokens.js'
import type { RefStore } from './ports.js'
import { MARKER_VARIABLE, newMarker } from './proc.js'
import { MIN_SECRET_LENGTH, Redactor } from './redact.js'
import { SecretFiles } from './secret-files.js'

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
  /**
   * Resolves reference tokens right before spawning: `{{secret:NAME}}` and `{{decrypt:ID}}` pass the
   * value through the environment; `{{secretfile:NAME}}` and `{{decryptfile:ID}}` become the path of
   * a private file (0600 in a 0700 directory) holding it, removed when the process ends.
   */
  readonly refStore?: RefStore
  /**
   * A token the `refStore` does not know: `keep` (default) leaves it literal, as text that only
   * looks like one; `refuse` fails with `EXEC_SECRET_UNKNOWN` before spawning, so a misspelt name
   * (`{{secret:GITHUB_TOKN}}`) is not sent on as the token's own text. Needs a `refStore`.
   */
  readonly unknownReferences?: 'keep' | 'refuse'
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
  /** Removes this spawn's private secret files; call once the process has ended or failed to start. */
  readonly release: () => void
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

/** Name of the variable that carries the n-th resolved value; reserved (`__LANGO_*`), never an agent's. */
function referenceVariable(index: number): string {
  return `__LANGO_REF_${index}`
}

const TOKEN_PATTERN = /\{\{(secret|decrypt|secretfile|decryptfile):([^}]+)\}\}/g
const MAX_COMMAND_LENGTH = 256 * 1024
/**
 * Linux's limit on one argument of a new program (`MAX_ARG_STRLEN`, 32 pages: 128 KiB with its
 * NUL): the command is `sh -c`'s one argument, so a longer one fails in the kernel (`E2BIG`).
 */
const MAX_ARGUMENT_BYTES = 128 * 1024 - 1
const ENV_SOURCES: readonly string[] = ['agent', 'trusted']

/** The RefStore key behind a token: `{{secretfile:gh}}` reads `{{secret:gh}}`. */
function storeKey(kind: string, name: string): string {
  return `{{${kind.startsWith('secret') ? 'secret' : 'decrypt'}:${name}}}`
}

function isFileKind(kind: string): boolean {
  return kind.endsWith('file')
}

/** `EXEC_SECRET_UNKNOWN` for a token under `unknownReferences: 'refuse'`. */
function unknownReference(kind: string, name: string, why: string): ExecError {
  const token = `{{${kind}:${name}}}`
  return new ExecError(
    'EXEC_SECRET_UNKNOWN',
    `secret reference ${token} names nothing the secret store holds${why}: check the name (a misspelt one would be sent on as the text ${token}), or store it first`,
    { data: { token, name } },
  )
}

/**
 * The references of one spawn: each distinct store key resolved once, its value registered for
 * masking, and handed over once as a variable (value tokens) or a private file (file tokens).
 */
class References {
  readonly env: Record<string, string> = {}
  readonly files = new SecretFiles()
  readonly #refStore: RefStore | undefined
  readonly #redactor: Redactor
  readonly #values = new Map<string, string | undefined>()
  readonly #variables = new Map<string, string>()
  readonly #paths = new Map<string, string>()

  readonly #refuseUnknown: boolean

  constructor(refStore: RefStore | undefined, redactor: Redactor, refuseUnknown: boolean) {
    this.#refStore = refStore
    this.#redactor = redactor
    this.#refuseUnknown = refuseUnknown
  }

  /**
   * The value behind a token, or undefined when the store does not know it (the token stays
   * literal; with `unknownReferences: 'refuse'`, `EXEC_SECRET_UNKNOWN` instead).
   */
  async resolve(kind: string, name: string): Promise<string | undefined> {
    if (this.#refStore === undefined) {
      // Nothing to look up: every token is unknown, and 'refuse' means refused.
      if (this.#refuseUnknown) throw unknownReference(kind, name, ' (no secret store was given)')
      return undefined
    }
    const key = storeKey(kind, name)
    if (!this.#values.has(key)) {
      const value = await this.#refStore.resolve(key)
      const known = typeof value === 'string' ? value : undefined
      // Refuses values too short to mask (EXEC_SECRET_TOO_SHORT) before anything is spawned.
      if (known !== undefined) this.#redactor.add(known, name)
      this.#values.set(key, known)
    }
    const value = this.#values.get(key)
    if (value === undefined && this.#refuseUnknown) throw unknownReference(kind, name, '')
    return value
  }

  /** What replaces a resolved token: the path of its private file, or its value. */
  replacement(kind: string, name: string, value: string): string {
    if (!isFileKind(kind)) return value
    const key = storeKey(kind, name)
    let path = this.#paths.get(key)
    if (path === undefined) {
      path = this.files.write(value)
      this.#paths.set(key, path)
    }
    return path
  }

  /** The variable that carries a resolved value into the child's environment. */
  variable(kind: string, name: string, value: string): string {
    const key = storeKey(kind, name)
    let variable = this.#variables.get(key)
    if (variable === undefined) {
      variable = referenceVariable(this.#variables.size)
      this.#variables.set(key, variable)
      this.env[variable] = value
    }
    return variable
  }
}

/**
 * Rewrites reference tokens (SECURITY.md SEC-2): a value token becomes an expansion of a variable
 * that holds the value in the child's environment, so the value is never in the shell's argv and
 * cannot change the command's syntax; a file token becomes the path of a private file holding the
 * value, inert wherever it sits. Tokens the store does not know stay literal. Refuses a value
 * token that a nested shell or interpreter would parse again, or that bash would evaluate as a name
 * or as arithmetic (`EXEC_SECRET_REPARSED`), or where the shell would not expand a variable
 * (`EXEC_SECRET_IN_QUOTES`).
 */
async function bindReferences(command: string, references: References): Promise<string> {
  if (!command.includes('{{')) return command
  // Resolved values by token offset. Same text, same parse: the rewrite below sees locations
  // equal to these.
  const byStart = new Map<number, string>()
  for (const location of locateRefTokens(command)) {
    if (location.context === 'comment') continue
    const value = await references.resolve(location.kind, location.name)
    if (value !== undefined) byStart.set(location.start, value)
  }
  if (byStart.size === 0) return command
  const result = rewriteRefTokens(command, ({ start, kind, name }) => {
    const value = byStart.get(start)
    if (value === undefined) return undefined
    return isFileKind(kind)
      ? { literal: references.replacement(kind, name, value) }
      : references.variable(kind, name, value)
  })
  const refused = placementRefusal(result)
  if (refused !== undefined) throw refused
  return result.command
}

/**
 * The refusal for a value token placed where it cannot work: parsed again as code by a nested
 * shell or interpreter (`EXEC_SECRET_REPARSED`), or where the shell would not expand a variable
 * (`EXEC_SECRET_IN_QUOTES`); undefined when every token sits well.
 */
function placementRefusal(result: ReturnType<typeof rewriteRefTokens>): ExecError | undefined {
  const [reparsed] = result.reparsed
  if (reparsed !== undefined) {
    const fileToken = `{{${reparsed.kind}file:${reparsed.name}}}`
    if (reparsed.evaluatedByBash === true)
      return new ExecError(
        'EXEC_SECRET_REPARSED',
        `secret reference ${reparsed.text} sits in a command where bash evaluates values as names or arithmetic (${reparsed.reparsedBy}): under bash (/bin/sh on some systems) a value such as a[$(cmd)] would run as code there, even quoted, and through a variable too; pass it as an environment variable (env: { V: '${reparsed.text}' }) and test it with [ "$V" -eq 0 ] or [ "$V" = x ], which read it as data, with no (( )), $(( )), [[ ]], let, declare -i or read/unset/printf -v in the command, or as a file (${fileToken})`,
        { data: { token: reparsed.text, by: reparsed.reparsedBy } },
      )
    return new ExecError(
      'EXEC_SECRET_REPARSED',
      `secret reference ${reparsed.text} sits in text that ${reparsed.reparsedBy} parses again as code, where its value would become part of the program; pass it as an environment variable (env: { NAME: '${reparsed.text}' }, then "$NAME" inside) or as a file (${fileToken})`,
      { data: { token: reparsed.text, by: reparsed.reparsedBy } },
    )
  }
  const [quoted] = result.unresolvedInQuotes
  if (quoted === undefined) return undefined
  return new ExecError(
    'EXEC_SECRET_IN_QUOTES',
    `secret reference ${quoted.text} is inside ${quoted.context} text, where the shell cannot expand it; move it outside single quotes (for example "…${quoted.text}…")`,
    { data: { token: quoted.text, context: quoted.context } },
  )
}

/**
 * Checks, without resolving anything, that every secret reference token in `command` sits where
 * a run could bind it: what `run`, `runWithPty` and `startBackground` refuse at spawn, said when
 * the command is written (a cron job or a workflow saved now and run later). Whether each
 * reference exists is the run's to find out; the store may gain it meanwhile.
 *
 * @throws ExecError `EXEC_SECRET_IN_QUOTES` for a value token inside single quotes, `$'…'` or a
 *   quoted here-document; `EXEC_SECRET_REPARSED` for one that `sh -c`, `eval` or an interpreter
 *   would parse again as code, or that bash would evaluate (`$(( ))`, `[[ ]]`, `let`, `read NAME`,
 *   or any token of a command holding such a construct).
 * @example
 * checkSecretPlacement(`curl -H "Authorization: Bearer {{secret:token}}" https://api.example.com`) // passes
 * checkSecretPlacement(`curl -H 'Authorization: Bearer {{secret:token}}' https://api.example.com`) // throws EXEC_SECRET_IN_QUOTES
 */
export function checkSecretPlacement(command: string): void {
  if (!command.includes('{{')) return
  const result = rewriteRefTokens(command, ({ kind }) =>
    isFileKind(kind) ? { literal: '/placeholder' } : 'LANGO_PLACEMENT_CHECK',
  )
  const refused = placementRefusal(result)
  if (refused !== undefined) throw refused
}

/** Resolves tokens inside env override values: values in place, file tokens as paths. */
async function resolveOverrideValues(
  env: Readonly<Record<string, string>> | undefined,
  references: References,
): Promise<Record<string, string>> {
  const resolved: Record<string, string> = {}
  if (env === undefined) return resolved
  for (const [name, value] of Object.entries(env)) {
    if (!value.includes('{{')) continue
    let result = ''
    let cursor = 0
    for (const match of value.matchAll(TOKEN_PATTERN)) {
      const [token, kind, tokenName] = match as unknown as [string, string, string]
      const secret = await references.resolve(kind, tokenName)
      result += value.slice(cursor, match.index)
      result += secret === undefined ? token : references.replacement(kind, tokenName, secret)
      cursor = match.index + token.length
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
function checkWorkingDirectory(cwd: unknown): string {
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
  if (process.platform === 'linux' && Buffer.byteLength(command) > MAX_ARGUMENT_BYTES)
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `command must be at most ${MAX_ARGUMENT_BYTES} bytes in UTF-8 (Linux's limit on one argument of a program), got ${Buffer.byteLength(command)}: write a longer script to a file and run the file`,
    )
  if (options.envSource !== undefined && !ENV_SOURCES.includes(options.envSource))
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `envSource must be "agent" or "trusted", got ${JSON.stringify(String(options.envSource)).slice(0, 40)}`,
    )
  if (options.unknownReferences !== undefined && !['keep', 'refuse'].includes(options.unknownReferences))
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `unknownReferences must be "keep" or "refuse", got ${JSON.stringify(options.unknownReferences)}`,
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
  const references = new References(options.refStore, redactor, options.unknownReferences === 'refuse')
  try {
    Object.assign(env, await resolveOverrideValues(options.env, references))
    const shellCommand = await bindReferences(command, references)
    Object.assign(env, references.env)
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
      release: () => references.files.remove(),
    }
  } catch (error) {
    references.files.remove()
    throw error
  }
}

/** The keys of {@link SpawnOptions}, for the unknown-key checks of `run`, `runWithPty` and `start`. */
export const SPAWN_OPTION_KEYS = [
  'cwd',
  'env',
  'envSource',
  'replaceEnv',
  'envPolicy',
  'refStore',
  'unknownReferences',
  'shell',
] as const
