import type { Runner } from '../runner-kit.js'
import { ARGUMENT_BUILDER_RUNNERS } from './argument-builders.js'
import { ENVIRONMENT_RUNNERS } from './environment.js'
import { INTERPRETER_RUNNERS, python } from './interpreters.js'
import { MULTIPLEXER_RUNNERS } from './multiplexers.js'
import { PACKAGE_MANAGER_RUNNERS } from './package-managers.js'
import { PRIVILEGE_RUNNERS } from './privilege.js'
import { SHELL_RUNNERS } from './shells.js'
import { TOOL_RUNNERS } from './tools.js'
import { WRAPPER_RUNNERS } from './wrappers.js'

export { variableRunKind } from './environment.js'

/**
 * Programs that run another program (SECURITY.md §6.2 item 4, issue 11 finding 4): `env`, `sudo`,
 * `xargs`, `sh -c`, interpreters, sandboxes, schedulers, tracers and the like. Each runner reads an argv
 * the way the program does (see `option-parser.ts`: which options take values, clusters,
 * abbreviations, `--`) and says what it would run, without running anything. One module per family:
 * `environment.ts`, `privilege.ts`, `wrappers.ts`, `shells.ts`, `argument-builders.ts`,
 * `package-managers.ts`, `interpreters.ts`, `multiplexers.ts`; tools whose options name a program or
 * a shell command (`git -c`, `tar -I`, `ssh -o ProxyCommand`) are in `tools.ts`.
 */

/** Runners by normalised program name (basename, lower case, no Windows suffix). */
const RUNNERS: ReadonlyMap<string, Runner> = new Map(
  [
    ...ENVIRONMENT_RUNNERS,
    ...PRIVILEGE_RUNNERS,
    ...WRAPPER_RUNNERS,
    ...SHELL_RUNNERS,
    ...ARGUMENT_BUILDER_RUNNERS,
    ...PACKAGE_MANAGER_RUNNERS,
    ...INTERPRETER_RUNNERS,
    ...MULTIPLEXER_RUNNERS,
    ...TOOL_RUNNERS,
  ].flatMap(([names, runner]) => names.map((name) => [name, runner] as const)),
)

/** `python`, `python3`, `python3.12`, `pypy3`: names the table cannot list one by one. */
function isPythonName(name: string): boolean {
  return /^(?:python[0-9.]*|pypy[0-9.]*)$/.test(name)
}

/** The runner for a program name, including version-suffixed interpreters such as `python3.12`. */
export function runnerFor(name: string): Runner | undefined {
  return RUNNERS.get(name) ?? (isPythonName(name) ? python : undefined)
}
