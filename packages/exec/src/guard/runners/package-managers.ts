import { type Argument, options } from '../option-parser.js'
import {
  afterDoubleDash,
  joinLoose,
  NO_OPTIONS,
  type Runner,
  type RunnerResult,
  subcommandWrapper,
} from '../runner-kit.js'
import { findOptionValue, type OptionSpec, skipOptions } from './option-scan.js'

/**
 * Package managers and toolchain or environment managers that run a package's binary or a command:
 * `npx`, `npm exec`, `pnpm`, `yarn`, `bun`, `go run`, `uvx`, `pipx run`, `poetry run`, `conda run`,
 * `mise exec`, `rbenv exec`, `nix shell`, `guix shell`, `rustup run`, ….
 */

/**
 * Packages whose name is not their binary's: `npx @lango/server …` runs the `lango` CLI (the
 * README's way to run it without installing).
 */
const PACKAGE_BINARIES: ReadonlyMap<string, string> = new Map([['@lango/server', 'lango']])

/**
 * The program a package runner's target runs: the version stripped (`npx lango@latest` names
 * `lango`), and a package named for another binary mapped to it (`@lango/server@0.1` → `lango`).
 */
function packageArgument(argument: Argument): Argument {
  const text = argument.literal
  if (text === undefined) return argument
  const at = text.indexOf('@', 1)
  const name = at === -1 ? text : text.slice(0, at)
  const literal = PACKAGE_BINARIES.get(name.toLowerCase()) ?? name
  return literal === text ? argument : { ...argument, literal }
}

const PACKAGE_RUNNER_OPTIONS: OptionSpec = {
  short: 'pw',
  long: ['package', 'node-options', 'cache', 'registry', 'userconfig', 'workspace', 'prefix'],
}

const packageRunner = (argv: readonly Argument[]): RunnerResult | undefined => {
  const code = findOptionValue(argv, ['-c'], ['call'])
  if (code !== undefined) return { shellCode: [{ text: code }] }
  const index = skipOptions(argv, 1, PACKAGE_RUNNER_OPTIONS)
  const target = argv[index]
  if (target === undefined) return undefined
  return { commands: [[packageArgument(target), ...argv.slice(index + 1)]] }
}

const npm: Runner = (argv) => {
  const at = skipOptions(argv, 1, PACKAGE_RUNNER_OPTIONS)
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand !== 'exec' && subcommand !== 'x') return undefined
  return packageRunner(argv.slice(at))
}

const PNPM_SUBCOMMANDS = new Set([
  'add',
  'install',
  'i',
  'update',
  'up',
  'upgrade',
  'remove',
  'rm',
  'uninstall',
  'un',
  'link',
  'ln',
  'unlink',
  'import',
  'rebuild',
  'rb',
  'prune',
  'fetch',
  'install-test',
  'it',
  'patch',
  'patch-commit',
  'patch-remove',
  'audit',
  'list',
  'ls',
  'outdated',
  'why',
  'licenses',
  'run',
  'run-script',
  'test',
  't',
  'start',
  'create',
  'env',
  'init',
  'publish',
  'pack',
  'root',
  'bin',
  'store',
  'server',
  'setup',
  'config',
  'c',
  'get',
  'set',
  'deploy',
  'doctor',
  'help',
  'self-update',
  'recursive',
  'm',
  'multi',
  'cat-file',
  'cat-index',
  'find-hash',
  'dedupe',
  'approve-builds',
  'ignored-builds',
  'cache',
  'login',
  'logout',
  'whoami',
  'version',
  'catalog',
  'sbom',
  'docs',
  'home',
  'view',
  'info',
  'search',
  'stars',
  'owner',
  'dist-tag',
  'deprecate',
  'undeprecate',
  'unpublish',
])

const pnpm: Runner = (argv) => {
  const at = skipOptions(argv, 1, {
    short: 'CF',
    long: ['dir', 'filter', 'filter-prod', 'reporter', 'loglevel'],
  })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  // `pnpm NAME` for a name that is not a pnpm command runs a script or a bin of that name.
  if (subcommand !== 'exec' && subcommand !== 'dlx') {
    return PNPM_SUBCOMMANDS.has(subcommand) ? undefined : { commands: [argv.slice(at)] }
  }
  const rest = argv.slice(at)
  const start = skipOptions(rest, 1, { long: ['package', 'reporter'] })
  if (
    rest.slice(1, start).some((argument) => argument.literal === '-c' || argument.literal === '--shell-mode')
  ) {
    return { shellCode: [{ text: joinLoose(rest.slice(start)) }] }
  }
  const target = rest[start]
  return target === undefined
    ? undefined
    : { commands: [[packageArgument(target), ...rest.slice(start + 1)]] }
}

const YARN_SUBCOMMANDS = new Set([
  'add',
  'audit',
  'autoclean',
  'bin',
  'cache',
  'check',
  'config',
  'create',
  'generate-lock-entry',
  'global',
  'help',
  'import',
  'info',
  'init',
  'install',
  'licenses',
  'link',
  'list',
  'login',
  'logout',
  'outdated',
  'owner',
  'pack',
  'policies',
  'publish',
  'remove',
  'tag',
  'team',
  'unlink',
  'unplug',
  'upgrade',
  'upgrade-interactive',
  'version',
  'versions',
  'why',
  'workspace',
  'workspaces',
  'up',
  'set',
  'plugin',
  'constraints',
  'explain',
  'npm',
  'patch',
  'patch-commit',
  'rebuild',
  'search',
  'stage',
  'dedupe',
  'test',
])

/** `yarn exec|dlx|run CMD`, and `yarn CMD` for a name that is not a yarn command (a bin or a script). */
const yarn: Runner = (argv) => {
  const at = skipOptions(argv, 1, { long: ['cwd'] })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  if (subcommand === 'exec' || subcommand === 'dlx' || subcommand === 'run') {
    const rest = argv.slice(at)
    const start = skipOptions(rest, 1, { short: 'p', long: ['package'] })
    const target = rest[start]
    return target === undefined
      ? undefined
      : { commands: [[packageArgument(target), ...rest.slice(start + 1)]] }
  }
  if (YARN_SUBCOMMANDS.has(subcommand)) return undefined
  return { commands: [argv.slice(at)] }
}

const BUN_SUBCOMMANDS = new Set([
  'add',
  'build',
  'create',
  'init',
  'install',
  'i',
  'link',
  'outdated',
  'pm',
  'publish',
  'remove',
  'rm',
  'repl',
  'test',
  'unlink',
  'update',
  'upgrade',
  'audit',
  'info',
  'patch',
  'why',
])

const bun: Runner = (argv) => {
  const code = findOptionValue(argv, ['-e', '-p'], ['eval', 'print'])
  if (code !== undefined) return { interpreterCode: [code] }
  const at = skipOptions(argv, 1, { short: 'r', long: ['preload', 'cwd', 'config', 'env-file'] })
  const subcommand = argv[at]?.literal?.toLowerCase()
  if (subcommand === undefined) return undefined
  if (subcommand === 'x' || subcommand === 'run') return packageRunner(argv.slice(at))
  if (subcommand === 'exec') return { shellCode: [{ text: joinLoose(argv.slice(at + 1)) }] }
  if (BUN_SUBCOMMANDS.has(subcommand)) return undefined
  const target = argv[at] as Argument
  return { scripts: [{ path: target, args: argv.slice(at + 1), kind: 'code' }] }
}

const GO_VALUE_FLAGS = new Set([
  '-tags',
  '-ldflags',
  '-gcflags',
  '-asmflags',
  '-mod',
  '-modfile',
  '-C',
  '-o',
  '-p',
  '-pkgdir',
  '-toolexec',
  '-overlay',
  '-pgo',
  '-buildmode',
  '-compiler',
  '-installsuffix',
  '-gccgoflags',
  '-coverpkg',
  '-covermode',
])

const go: Runner = (argv) => {
  if (argv[1]?.literal !== 'run') return undefined
  const commands: Argument[][] = []
  let index = 2
  while (index < argv.length) {
    const text = argv[index]?.literal
    if (text === undefined || !text.startsWith('-')) break
    if (text === '--') {
      index++
      break
    }
    if (text === '-exec') {
      // `go run -exec PROGRAM` runs the built binary through PROGRAM.
      const program = argv[index + 1]
      if (program !== undefined) commands.push([program])
    }
    index += GO_VALUE_FLAGS.has(text) || text === '-exec' ? 2 : 1
  }
  const target = argv[index]
  if (target === undefined) return { commands }
  const pattern = target.literal?.replace(/@.*$/, '').replace(/\/\.\.\.$/, '')
  const path = pattern === undefined ? target : { ...target, literal: pattern }
  return { commands, scripts: [{ path, args: argv.slice(index + 1), kind: 'program' }] }
}

const nixShell: Runner = (argv) => {
  const code = findOptionValue(argv, [], ['run', 'command'])
  return code === undefined ? undefined : { shellCode: [{ text: code }] }
}

const nix: Runner = (argv) => {
  const subcommand = argv[1]?.literal
  if (subcommand !== 'shell' && subcommand !== 'develop') return undefined
  const index = argv.findIndex((argument) => argument.literal === '-c' || argument.literal === '--command')
  return index === -1 ? undefined : { commands: [argv.slice(index + 1)] }
}

export const PACKAGE_MANAGER_RUNNERS: readonly [readonly string[], Runner][] = [
  [['rustup'], subcommandWrapper(['run'], NO_OPTIONS, 1)],
  [['npx', 'bunx', 'pnpx'], packageRunner],
  [['npm'], npm],
  [['pnpm'], pnpm],
  [['yarn'], yarn],
  [['bun'], bun],
  [['go'], go],
  [['nix-shell'], nixShell],
  [['nix'], nix],
  [
    ['poetry', 'pipenv', 'uv', 'pdm', 'hatch', 'rye', 'devbox', 'pixi'],
    subcommandWrapper(['run'], options('', 'with= from= python= env=')),
  ],
  [['uvx'], packageRunner],
  [['pipx'], subcommandWrapper(['run'], options('', 'spec= python='))],
  [['bundle', 'bundler'], subcommandWrapper(['exec'], NO_OPTIONS)],
  [['conda', 'mamba', 'micromamba'], subcommandWrapper(['run'], options('n:p:', 'name= prefix= cwd='))],
  [['mise', 'rtx', 'asdf'], afterDoubleDash(['exec', 'x'], NO_OPTIONS)],
  [['rbenv', 'pyenv', 'nodenv', 'goenv', 'jenv', 'plenv', 'phpenv'], subcommandWrapper(['exec'], NO_OPTIONS)],
  [['direnv'], subcommandWrapper(['exec'], NO_OPTIONS, 1)],
  [['guix'], afterDoubleDash(['shell', 'environment'], NO_OPTIONS)],
]
