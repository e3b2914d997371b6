import { ExecError } from './errors.js'
import { refuseUnknownKeys } from './option-keys.js'

const checkPolicyKeys = refuseUnknownKeys('envPolicy', ['inherit', 'allow', 'deny'])
const checkBuildKeys = refuseUnknownKeys('env build options', [
  'base',
  'overrides',
  'overrideSource',
  'replace',
  'pty',
])

/**
 * Child-environment policy (SECURITY.md §1). One builder serves every spawner: `run`,
 * `runWithPty`, background processes, and — through the server's ShellRunner — cron shell jobs
 * and workflow shell steps.
 */
export interface EnvPolicy {
  /**
   * `core` (default) starts from an empty object and copies an allowlist (PATH, HOME, USER,
   * LOGNAME, LANG, LC_*, TZ, TMPDIR/TMP/TEMP, COLORTERM, NO_COLOR, FORCE_COLOR); `all` copies
   * every inherited key. The deny list applies in both cases and always wins.
   */
  readonly inherit?: 'core' | 'all'
  /** Extra inherited keys to keep (globs like `MY_APP_*`); can never re-admit a denied key. */
  readonly allow?: readonly string[]
  /** Extra keys to drop (globs). */
  readonly deny?: readonly string[]
}

/** Where env overrides come from: agent overrides get the stricter checks of ENV-3. */
export type EnvOverrideSource = 'agent' | 'trusted'

export interface BuildEnvOptions {
  /** The parent environment to inherit from (default `process.env`). */
  readonly base?: Readonly<Record<string, string | undefined>>
  readonly policy?: EnvPolicy
  /** Variables to set on top of the filtered base. */
  readonly overrides?: Readonly<Record<string, string>>
  /** Default `agent`: overrides are checked as untrusted input. */
  readonly overrideSource?: EnvOverrideSource
  /** `true` drops the inherited base entirely: the child sees only the overrides (plus non-interactive defaults). */
  readonly replace?: boolean
  /** PTY children also get `TERM` (inherited or `xterm-256color`). */
  readonly pty?: boolean
}

/** The built environment and the inherited names that were filtered out (names only, for audit). */
export interface BuiltEnv {
  readonly env: Record<string, string>
  readonly dropped: readonly string[]
}

const CORE_KEYS = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TMPDIR',
  'TMP',
  'TEMP',
  'COLORTERM',
  'NO_COLOR',
  'FORCE_COLOR',
])

/** Names denied in the inherited set and as overrides (upper-case). SECURITY.md table 1.3. */
const DENIED_NAMES = new Set(
  `_RLD LIBPATH SHLIB_PATH GLIBC_TUNABLES GCONV_PATH LOCPATH NLSPATH PATH_LOCALE HOSTALIASES LOCALDOMAIN
  RES_OPTIONS RESOLV_HOST_CONF MALLOC_TRACE TZDIR BASH_ENV ENV KSH_ENV SHELLOPTS BASHOPTS PS0 PS1 PS2 PS4
  PROMPT_COMMAND IFS CDPATH GLOBIGNORE FPATH ZDOTDIR NULLCMD READNULLCMD TMPPREFIX INPUTRC HISTFILE
  HISTFILESIZE SHELL TERMINFO TERMINFO_DIRS TERMCAP TERMPATH NODE_OPTIONS NODE_PATH NODE_REPL_EXTERNAL_MODULE
  NODE_REPL_HISTORY NODE_V8_COVERAGE NODE_REDIRECT_WARNINGS NODE_TLS_REJECT_UNAUTHORIZED NODE_EXTRA_CA_CERTS
  YARN_RC_FILENAME PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONSTARTUP PYTHONINSPECT PYTHONBREAKPOINT
  PYTHONWARNINGS VIRTUAL_ENV CONDA_PREFIX CONDA_DEFAULT_ENV PERL5OPT PERL5LIB PERLLIB PERL5DB PERL5DBCMD
  PERLIO_DEBUG RUBYOPT RUBYLIB RUBYSHELL GEM_HOME GEM_PATH BUNDLE_GEMFILE JAVA_TOOL_OPTIONS _JAVA_OPTIONS
  JDK_JAVA_OPTIONS JAVA_OPTS CLASSPATH MAVEN_OPTS GRADLE_OPTS SBT_OPTS ANT_OPTS CATALINA_OPTS
  DOTNET_STARTUP_HOOKS DOTNET_ADDITIONAL_DEPS CORECLR_PROFILER CORECLR_PROFILER_PATH CORECLR_ENABLE_PROFILING
  LUA_PATH LUA_CPATH TCLLIBPATH ERL_AFLAGS ERL_FLAGS ERL_ZFLAGS ELIXIR_ERL_OPTIONS PHPRC PHP_INI_SCAN_DIR
  EMACSLOADPATH VIMINIT EXINIT GVIMINIT MYVIMRC JULIA_EDITOR OPENSSL_CONF OPENSSL_ENGINES SSLKEYLOGFILE
  SSH_ASKPASS SUDO_ASKPASS HGRCPATH HGEDITOR HGMERGE SVN_SSH SVN_EDITOR PAGER MANPAGER LESSOPEN LESSCLOSE
  EDITOR VISUAL FCEDIT SUDO_EDITOR BROWSER MAKEFLAGS MFLAGS MAKE CC CXX CPP CXXCPP CFLAGS LDFLAGS CPATH
  C_INCLUDE_PATH CPLUS_INCLUDE_PATH OBJC_INCLUDE_PATH LIBRARY_PATH CMAKE_C_COMPILER CMAKE_CXX_COMPILER
  CMAKE_TOOLCHAIN_FILE CONFIG_SITE CONFIG_SHELL RUSTC RUSTDOC RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER RUSTFLAGS
  CARGO_HOME GOFLAGS CGO_CFLAGS CGO_LDFLAGS GOPROXY GONOSUMDB GONOSUMCHECK GONOPROXY GOPRIVATE GOENV GOPATH
  DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG DOCKER_TLS_VERIFY DOCKER_CERT_PATH KUBECONFIG TF_CLI_CONFIG_FILE
  TF_PLUGIN_CACHE_DIR PACKER_PLUGIN_PATH VAGRANT_VAGRANTFILE HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY
  FTP_PROXY SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE CURL_HOME WGETRC DATABASE_URL
  REDIS_URL MONGODB_URI AMQP_URL SSH_AUTH_SOCK GPG_AGENT_INFO DBUS_SESSION_BUS_ADDRESS KRB5CCNAME
  BW_SESSION PGPASSWORD MYSQL_PWD AWS_ACCESS_KEY_ID AWS_CONTAINER_CREDENTIALS_FULL_URI
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_WEB_IDENTITY_TOKEN_FILE AWS_SHARED_CREDENTIALS_FILE
  AZURE_CLIENT_CERTIFICATE_PATH AZURE_AUTH_LOCATION GOOGLE_APPLICATION_CREDENTIALS ACTIONS_ID_TOKEN_REQUEST_URL
  MANOPT MANPATH MANROFFOPT MANROFFSEQ LESS MORE LESSKEY LESSKEYIN LESSKEY_SYSTEM LESSKEYIN_SYSTEM LESSHISTFILE
  AWS_CONFIG_FILE BOTO_CONFIG CLOUDSDK_CONFIG AZURE_CONFIG_DIR OPENSSL_MODULES GNUTLS_SYSTEM_PRIORITY_FILE
  GOROOT GOTOOLCHAIN GOBIN GOCACHE GOMODCACHE JAVA_HOME JDK_HOME JRE_HOME M2_HOME MAVEN_HOME GRADLE_HOME
  GRADLE_USER_HOME ANT_HOME BASH_LOADABLES_PATH NODE_ICU_DATA PERL_MB_OPT PERL_MM_OPT PERL_LOCAL_LIB_ROOT
  XDG_CONFIG_DIRS XDG_DATA_DIRS RUSTUP_HOME RUSTUP_TOOLCHAIN DOTNET_ROOT NVM_DIR PYENV_ROOT RBENV_ROOT`
    .split(/\s+/)
    .filter(Boolean),
)

/** Name prefixes denied (upper-case). `GIT_*` is handled separately (four identity keys survive). */
const DENIED_PREFIXES = [
  'LD_',
  'DYLD_',
  '_RLD',
  'LDR_',
  'BASH_FUNC_',
  '__BASH_FUNC',
  'LANGO_',
  // Reserved for the variables exec itself sets (reference values, the spawn marker).
  '__LANGO_',
  'PYTHON',
  'PERL5',
  'CARGO_',
  'NPM_CONFIG_',
  'YARN_',
  'PNPM_',
  'BUN_CONFIG_',
  'PIP_',
  'UV_',
  'LUA_INIT',
  'R_PROFILE',
  'R_ENVIRON',
  'BZR_',
  'HELM_',
  'ANSIBLE_',
  'OP_SESSION_',
  'OTEL_EXPORTER_OTLP_',
  'KRB5_CONFIG',
]

const GIT_IDENTITY = new Set([
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
])

/** Credential-shaped names (SECURITY.md table 1.3, "Secrets and credentials"). */
const CREDENTIAL_PATTERN =
  /KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|COOKIE|_PAT$|_AUTH$|_AUTH_|_DSN$/

/** Overrides an agent may never set, on top of everything denied above (ENV-3). */
const AGENT_OVERRIDE_DENIED = new Set([
  'PATH',
  'HOME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'TERM',
  'COMSPEC',
  'PATHEXT',
  'SYSTEMROOT',
  'WINDIR',
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
])

const OVERRIDE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/
const MAX_OVERRIDE_VALUE = 32 * 1024
const URL_WITH_CREDENTIALS = /^[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:[^/\s@]*@/i
const ZONEINFO_NAME = /^:?[A-Za-z0-9_+-]+(?:\/[A-Za-z0-9_+-]+)*$/

/** Values set for every child so tools fail fast instead of waiting for a human (ENV-6). */
const NON_INTERACTIVE: Readonly<Record<string, string>> = {
  GIT_TERMINAL_PROMPT: '0',
  GCM_INTERACTIVE: 'never',
  DEBIAN_FRONTEND: 'noninteractive',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
}

/**
 * Name suffixes denied: every `*PAGER` and `*EDITOR` names a program that tools run for you
 * (`SYSTEMD_PAGER`, `PSQL_PAGER`, `KUBE_EDITOR`, `GIT_EDITOR`, `HGEDITOR`, …).
 */
const DENIED_SUFFIXES = ['PAGER', 'EDITOR']

/** True when `name` is denied for every child, whoever asks (table 1.3 of SECURITY.md). */
export function isDeniedEnvName(name: string): boolean {
  const upper = name.toUpperCase()
  if (DENIED_NAMES.has(upper)) return true
  for (const suffix of DENIED_SUFFIXES) if (upper.endsWith(suffix)) return true
  if (upper.startsWith('GIT_')) return !GIT_IDENTITY.has(upper)
  for (const prefix of DENIED_PREFIXES) if (upper.startsWith(prefix)) return true
  return upper.startsWith('XDG_') && upper.endsWith('_HOME')
}

/** True when `name` looks like it carries a credential (`*_API_KEY`, `*TOKEN*`, `*SECRET*`, …). */
function isCredentialEnvName(name: string): boolean {
  return CREDENTIAL_PATTERN.test(name.toUpperCase())
}

/**
 * True when an environment variable holds a credential by this package's rule: its name looks like
 * one (`AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`, `PGPASSWORD`, `*_API_KEY`, …) or its value is a URL
 * with a password (`HTTPS_PROXY=http://user:pw@proxy`). Such a variable is never inherited by a
 * child ({@link createEnvBuilder}); a host uses the same rule to keep such variables out of its own
 * environment block, which its children can read in `/proc/<pid>/environ`.
 * @example
 * isCredentialEnv('AWS_SECRET_ACCESS_KEY', 'abc') // true
 * isCredentialEnv('HTTPS_PROXY', 'http://user:pw@proxy:3128') // true
 * isCredentialEnv('LANG', 'C.UTF-8') // false
 */
export function isCredentialEnv(name: string, value: string): boolean {
  return isCredentialEnvName(name) || URL_WITH_CREDENTIALS.test(value)
}

const ONLY_REFERENCE_TOKENS = /^(?:\{\{(?:secret|decrypt)(?:file)?:[^}]+\}\})+$/

function globToRegExp(glob: string): RegExp {
  const escaped = glob.toUpperCase().replace(/[.+^${}()|[\]\\?]/g, '\\$&')
  return new RegExp(`^${escaped.replaceAll('*', '.*')}$`)
}

function isWellFormedName(name: string): boolean {
  return name.length > 0 && !name.includes('=') && !name.includes('\0')
}

function isDeniedValue(value: string): boolean {
  return value.startsWith('() ') || value.includes('\0') || URL_WITH_CREDENTIALS.test(value)
}

/** Keeps only absolute, non-`.` PATH entries, in order, without duplicates (ENV-5). */
export function cleanPath(path: string): string {
  if (path === lastPath.input) return lastPath.output
  const seen = new Set<string>()
  for (const entry of path.split(':')) {
    if (!entry.startsWith('/') || entry.split('/').includes('..')) continue
    seen.add(entry)
  }
  const output = [...seen].join(':')
  lastPath = { input: path, output }
  return output
}

/** PATH rarely changes between spawns: remember the last cleaning. */
let lastPath = { input: '', output: '' }

/** Locale names never contain `/` or `%` and zones are zoneinfo names (sudo's checks): no paths. */
function localeValueAllowed(upper: string, value: string): boolean {
  if (upper === 'LANG' || upper === 'LANGUAGE' || upper.startsWith('LC_')) return !/[/%]/.test(value)
  if (upper === 'TZ') return ZONEINFO_NAME.test(value) && !value.includes('..')
  return true
}

/**
 * Compiles an {@link EnvPolicy} once so that building a child environment per spawn is cheap.
 * @example
 * const env = createEnvBuilder({ inherit: 'core', allow: ['MY_APP_*'] })
 * const { env: childEnv } = env.build({ overrides: { REPORT_DATE: '2026-11-22' } })
 */
export function createEnvBuilder(policy: EnvPolicy = {}): {
  build(options?: Omit<BuildEnvOptions, 'policy'>): BuiltEnv
} {
  checkPolicyKeys(policy)
  if (policy.inherit !== undefined && policy.inherit !== 'core' && policy.inherit !== 'all')
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `envPolicy.inherit must be "core" or "all", got ${JSON.stringify(policy.inherit)}`,
    )
  for (const key of ['allow', 'deny'] as const) {
    const globs: unknown = policy[key]
    if (globs !== undefined && (!Array.isArray(globs) || !globs.every((glob) => typeof glob === 'string')))
      throw new ExecError(
        'EXEC_INVALID_OPTION',
        `envPolicy.${key} must be a list of variable names or globs such as MY_APP_*`,
      )
  }
  const inherit = policy.inherit ?? 'core'
  const allow = (policy.allow ?? []).map(globToRegExp)
  const deny = (policy.deny ?? []).map(globToRegExp)
  const configDenied = (upper: string) => deny.some((pattern) => pattern.test(upper))
  const keepInherited = (upper: string) =>
    inherit === 'all' ||
    CORE_KEYS.has(upper) ||
    upper.startsWith('LC_') ||
    allow.some((pattern) => pattern.test(upper))

  return {
    build(options = {}) {
      checkBuildKeys(options)
      const env: Record<string, string> = {}
      const dropped: string[] = []
      if (options.replace !== true) {
        const base = options.base ?? process.env
        // Decide on the name first: reading a value from process.env is a native call, and
        // most inherited names are not on the allowlist anyway.
        for (const name of Object.keys(base)) {
          const upper = name.toUpperCase()
          if (!keepInherited(upper)) continue
          const value = base[name]
          if (value === undefined) continue
          if (
            !isWellFormedName(name) ||
            isDeniedEnvName(name) ||
            isCredentialEnvName(name) ||
            configDenied(upper) ||
            isDeniedValue(value) ||
            !localeValueAllowed(upper, value)
          ) {
            dropped.push(name)
            continue
          }
          env[name] = upper === 'PATH' ? cleanPath(value) : value
        }
      }
      Object.assign(env, NON_INTERACTIVE)
      if (options.pty === true) env.TERM = inheritedTerm(options.base ?? process.env)
      const overrides = options.overrides
      if (overrides !== undefined) {
        const source = options.overrideSource ?? 'agent'
        for (const name of Object.keys(overrides)) {
          const value = overrides[name] as string
          checkOverride(name, value, source, configDenied)
          env[name] = name.toUpperCase() === 'PATH' ? cleanPath(value) : value
        }
      }
      return { env, dropped }
    },
  }
}

function inheritedTerm(base: Readonly<Record<string, string | undefined>>): string {
  const term = base.TERM
  return term !== undefined && /^[A-Za-z0-9._+-]{1,64}$/.test(term) && term !== 'dumb'
    ? term
    : 'xterm-256color'
}

function checkOverride(
  name: string,
  value: unknown,
  source: EnvOverrideSource,
  configDenied: (upper: string) => boolean,
): void {
  const reject = (reason: string): never => {
    // The message names the key, never the value (ENV-3).
    throw new ExecError('EXEC_ENV_REJECTED', `env override ${JSON.stringify(name)} rejected: ${reason}`, {
      data: { name },
    })
  }
  if (typeof value !== 'string') reject('the value must be a string')
  const text = value as string
  if (!isWellFormedName(name)) reject('names must be non-empty and contain no "=" or NUL')
  if (isDeniedValue(text))
    reject('values may not contain NUL, start with "() " or embed URL credentials (use a secret reference)')
  const upper = name.toUpperCase()
  if (isDeniedEnvName(name) || configDenied(upper))
    reject('this variable can change what the child runs, and is never passed')
  if (!localeValueAllowed(upper, text))
    reject('locale values may not contain "/" or "%", and TZ must be a zone name such as Europe/Berlin')
  if (source === 'agent') {
    if (isCredentialEnvName(name) && !ONLY_REFERENCE_TOKENS.test(text))
      reject('credential-named variables may only carry a secret reference such as {{secret:NAME}}')
    if (!OVERRIDE_NAME.test(name)) reject('agent env names must match ^[A-Za-z_][A-Za-z0-9_]{0,127}$')
    if (text.length > MAX_OVERRIDE_VALUE)
      reject(`agent env values are limited to ${MAX_OVERRIDE_VALUE} bytes`)
    if (AGENT_OVERRIDE_DENIED.has(upper))
      reject('agents may not set PATH, HOME, TMPDIR, TERM or git identity')
  }
}
