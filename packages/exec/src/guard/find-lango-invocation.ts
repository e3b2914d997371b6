import type { Assignment, Command, ParsedScript, Pipeline, SyntaxNode, Word } from 'unbash'
import { forEachChild, parse } from 'unbash'
import { literalWordValue, nextPipelineOutputs, redirectInputs, scriptOutputs } from './command-output.js'
import { type Argument, textArgument } from './option-parser.js'
import { joinLoose, type RunnerResult, type ScriptRun, splitOnce } from './runner-kit.js'
import { runnerFor, variableRunKind } from './runners/index.js'
import {
  containsLangoWord,
  namesLango,
  normalizeProgramName,
  removeEmptyExpansions,
  scanTokensForLango,
  stripShellQuoting,
  wordAfterLango,
} from './shell-text.js'
import { collectVariables, type ValueSource } from './variables.js'
import {
  canVanish,
  DYNAMIC,
  emptiedText,
  MAX_PATTERNS,
  matchLango,
  printfPatterns,
  textPattern,
  type WordPattern,
  type WordScope,
  wordFields,
  wordPatterns,
} from './word-shape.js'

/** Why the guard considers a command a lango invocation. */
export type LangoFindingReason =
  /** A program named lango in command position, directly or behind a runner (`sudo`, `sh -c`, …). */
  | 'command'
  /** A shell, interpreter or package runner executes a file or package named lango. */
  | 'script'
  /** A shell function named lango is defined. */
  | 'function'
  /**
   * The program name, or the command a runner runs (`awk '{system($2)}'`, `sed 's/x/y/e'`), is
   * computed at run time and the text names lango (§6.2 item 6).
   */
  | 'ambiguous'
  /** A standalone word lango appears in code for another interpreter (`python -c`, `node -e`). */
  | 'interpreter-code'
  /** The text does not parse and one of its tokens is lango (§6.2 item 8). */
  | 'parse-error'
  /** The text is longer than {@link MAX_GUARD_INPUT_LENGTH}. */
  | 'too-long'
  /** Nested shells, eval or runners go deeper than the guard follows, or the work budget ran out. */
  | 'too-complex'

/** A lango invocation found in a command line. */
export interface LangoFinding {
  readonly reason: LangoFindingReason
  /** The first operand after lango's global options, lower-cased, when the text fixes it. */
  readonly subcommand: string | undefined
}

/** Longest command (in UTF-16 code units) the guard analyses; longer ones are blocked. */
export const MAX_GUARD_INPUT_LENGTH = 64 * 1024

/** How many times shell code may be parsed again inside itself (`sh -c`, `eval`, piped code). */
const MAX_GUARD_NESTING = 8

/** Characters parsed in total, nested strings included, before the guard gives up and blocks. */
const PARSE_BUDGET = 1024 * 1024

/** Runner hops (`env sudo nohup …`) followed per command word before the guard blocks. */
const MAX_RUNNER_HOPS = 64

/** Nested scripts, functions and aliases the guard remembers per command text. */
const MAX_DEFINITIONS = 64

/** lango global options that take a value, so `lango --config x cron` still finds `cron`. */
const LANGO_VALUE_OPTIONS = new Set([
  '--config',
  '--profile',
  '--data-dir',
  '--home',
  '--log-level',
  '--log-format',
])

/** Words that may hold nested code: parameter, command, arithmetic and process substitutions. */
const NESTED_CODE = /[$`]|[<>]\(/

interface State {
  finding: LangoFinding | undefined
  budget: number
  /** Program names made to run lango earlier in the text (`ln -s "$(which lango)" x`). */
  readonly aliases: Set<string>
  /** Files written earlier in the text with known content (`echo 'lango cron' > run.sh`). */
  readonly files: Map<string, readonly string[]>
  /** Assignments per parsed script, collected on first use. */
  readonly variables: Map<ParsedScript, ReadonlyMap<string, readonly ValueSource[]>>
  /** Scripts parsed again inside the text (`eval`, `sh -c`): their assignments count everywhere. */
  readonly nested: ParsedScript[]
  /** Functions defined in the text, by name: the text of their body. */
  readonly functions: Map<string, string>
  /** Aliases defined in the text, by name: their value. */
  readonly shellAliases: Map<string, string>
  /** Functions and aliases being expanded now (they do not expand into themselves). */
  readonly expanding: Set<string>
  /** The text turns on `nullglob` (or zsh's `null_glob`): a glob that matches nothing vanishes. */
  readonly nullglob: boolean
}

/** Thrown when the work budget runs out inside a word evaluation; the guard then blocks. */
class BudgetExhausted extends Error {}

/** What a command's stdin carries, when the text shows it. */
interface Input {
  /** Text piped or redirected in (here-documents, here-strings, `echo … |`). */
  readonly texts: readonly string[] | undefined
  /** A file redirected in with `<`. */
  readonly file: Argument | undefined
}

const NO_INPUT: Input = { texts: undefined, file: undefined }

class Scope implements WordScope {
  readonly state: State
  readonly depth: number
  readonly scripts: readonly ParsedScript[]
  readonly positional: readonly string[] | undefined
  readonly shifts: boolean
  /** Nested text (see {@link WordScope.reparsed}); function bodies count too, which only errs safe. */
  readonly reparsed: boolean
  parseErrors = false
  readonly #values = new Map<string, { nested: number; patterns: readonly WordPattern[] | undefined }>()
  readonly #evaluating = new Set<string>()
  readonly #parent: Scope | undefined
  /** The source text this scope parsed. */
  readonly text: string
  #holdsLango: boolean | undefined

  constructor(
    state: State,
    parent: Scope | undefined,
    text: string,
    scripts: readonly ParsedScript[],
    positional: readonly string[] | undefined,
    shifts: boolean,
  ) {
    this.state = state
    this.depth = parent === undefined ? 0 : parent.depth + 1
    this.#parent = parent
    this.text = text
    this.scripts = scripts
    this.positional = positional
    this.shifts = shifts
    this.reparsed = parent !== undefined
  }

  /** The text (or an enclosing one) names lango as a word; computed on first use. */
  get holdsLango(): boolean {
    this.#holdsLango ??= (this.#parent?.holdsLango ?? false) || holdsLangoWord(this.text)
    return this.#holdsLango
  }

  variablePatterns(name: string, index = 0): readonly WordPattern[] | undefined {
    const key = index === 0 ? name : `${name}[${index}]`
    // A cached value stays valid until a nested script (`eval x=…`) adds assignments.
    const nested = this.state.nested.length
    const cached = this.#values.get(key)
    if (cached !== undefined && cached.nested === nested) return cached.patterns
    // `x=$x$x`: a value that refers to itself is unknown where the cycle closes.
    if (this.#evaluating.has(key)) return [[DYNAMIC]]
    let patterns: WordPattern[] | undefined
    this.#evaluating.add(key)
    try {
      for (const source of this.#sources(name)) {
        if (source.index !== index && source.index !== -1) continue
        const values = this.#sourcePatterns(source, index)
        if (values === undefined) continue
        patterns ??= []
        if (source.append) {
          // `x=lan; x+=go`: each earlier value followed by the appended one, or the appended one alone.
          const joined = patterns.flatMap((before) => values.map((after) => [...before, ...after]))
          patterns = [...joined, ...values].slice(0, MAX_PATTERNS)
        } else {
          for (const value of values) if (patterns.length < MAX_PATTERNS) patterns.push(value)
        }
      }
    } finally {
      this.#evaluating.delete(key)
    }
    this.#values.set(key, { nested, patterns })
    return patterns
  }

  arrayLength(name: string): number {
    const key = `#${name}`
    if (this.#evaluating.has(key)) return 0
    this.#evaluating.add(key)
    try {
      let length = 0
      let unfixed = false
      for (const source of this.#sources(name)) {
        const value = source.value
        if (typeof value !== 'string' && value.type === 'reference') {
          const target = referenceTarget(value.target)
          if (target !== undefined) length = Math.max(length, this.arrayLength(target.name))
        } else if (source.index === -1) unfixed = true
        else length = Math.max(length, source.index + 1)
      }
      return unfixed ? length + 1 : length
    } finally {
      this.#evaluating.delete(key)
    }
  }

  /** Every assignment to `name` in this scope's scripts and the nested ones. */
  #sources(name: string): ValueSource[] {
    const sources: ValueSource[] = []
    for (const script of this.scripts)
      sources.push(...(variablesOf(script, this.state.variables).get(name) ?? []))
    for (const script of this.state.nested) {
      if (!this.scripts.includes(script))
        sources.push(...(variablesOf(script, this.state.variables).get(name) ?? []))
    }
    return sources
  }

  /** The patterns one assignment gives element `index`; `undefined` for a nameref to an unset variable. */
  #sourcePatterns(source: ValueSource, index: number): readonly WordPattern[] | undefined {
    const value = source.value
    if (typeof value === 'string') return [textPattern(value)]
    switch (value.type) {
      case 'printf':
        return printfPatterns(value.format, value.args, this)
      case 'reference': {
        // `declare -n r=c`: `$r` is `$c`; `declare -n r=a[1]`: `$r` is `${a[1]}`.
        const target = referenceTarget(value.target)
        if (target === undefined) return [[DYNAMIC]]
        return this.variablePatterns(target.name, target.index ?? index)
      }
      default:
        // `for c in "${a[@]}"`: `c` takes every element in turn.
        if (source.context === 'each') return wordFields(value, this).flat().slice(0, MAX_PATTERNS)
        return wordPatterns(value, this, source.context === 'assigned' ? 'assigned' : 'argument')
    }
  }

  charge(pieces: number): void {
    this.state.budget -= pieces
    if (this.state.budget < 0) throw new BudgetExhausted()
  }
}

/**
 * Reads `command` as bash and reports the first lango invocation it finds (SECURITY.md §6.2), or
 * `undefined` when there is none. Pure and synchronous; its cost is bounded by the input cap, the
 * nesting cap and a parse budget.
 */
export function findLangoInvocation(command: string): LangoFinding | undefined {
  if (command.length > MAX_GUARD_INPUT_LENGTH) return { reason: 'too-long', subcommand: undefined }
  const state: State = {
    finding: undefined,
    budget: PARSE_BUDGET,
    aliases: new Set(),
    files: new Map(),
    variables: new Map(),
    nested: [],
    functions: new Map(),
    shellAliases: new Map(),
    expanding: new Set(),
    nullglob: /null_?glob/i.test(command),
  }
  try {
    analyzeSource(command, undefined, state, undefined)
  } catch (error) {
    if (error instanceof BudgetExhausted) return { reason: 'too-complex', subcommand: undefined }
    // The parser or the walk failed on this input: fall back to the token scan, like a parse error.
    const scan = scanTokensForLango(command)
    return scan.found ? { reason: 'parse-error', subcommand: scan.nextToken } : undefined
  }
  return state.finding
}

function record(scope: Scope, reason: LangoFindingReason, subcommand?: string): void {
  scope.state.finding ??= { reason, subcommand }
}

function analyzeSource(
  text: string,
  parent: Scope | undefined,
  state: State,
  positional: readonly string[] | undefined,
): void {
  if (state.finding !== undefined) return
  const depth = parent === undefined ? 0 : parent.depth + 1
  state.budget -= text.length
  if (depth > MAX_GUARD_NESTING || state.budget < 0) {
    state.finding = { reason: 'too-complex', subcommand: undefined }
    return
  }
  const script = parse(text)
  if (exceedsParserNesting(script)) {
    state.finding = { reason: 'too-complex', subcommand: undefined }
    return
  }
  if (parent !== undefined && state.nested.length < MAX_DEFINITIONS) state.nested.push(script)
  const scope = new Scope(
    state,
    parent,
    text,
    [...(parent?.scripts ?? []), script],
    positional,
    /\b(?:shift|set|getopts)\b/.test(text),
  )
  walk(script, scope, undefined)
  if (state.finding === undefined && scope.parseErrors) {
    const scan = scanTokensForLango(text)
    if (scan.found) state.finding = { reason: 'parse-error', subcommand: scan.nextToken }
  }
}

/** The text names lango as a word, also once its expansions that may be empty are removed. */
function holdsLangoWord(text: string): boolean {
  // `eval x=lan\$\(\)go`: the escapes go first, then the expansions.
  if (namesLango(stripShellQuoting(text))) return true
  const reduced = removeEmptyExpansions(text)
  return reduced !== text && containsLangoWord(stripShellQuoting(reduced))
}

function walk(node: SyntaxNode, scope: Scope, input: readonly string[] | undefined): void {
  if (scope.state.finding !== undefined) return
  switch (node.type) {
    case 'Script':
      if (exceedsParserNesting(node)) {
        record(scope, 'too-complex')
        return
      }
      if (node.errors !== undefined && node.errors.length > 0) scope.parseErrors = true
      break
    case 'Command':
      // Substitutions in the words run before the command itself, so report what they run first.
      forEachChild(node, (child) => walk(child, scope, undefined))
      analyzeCommand(node, scope, input)
      return
    case 'Pipeline':
      walkPipeline(node, scope, input)
      return
    case 'Function': {
      const name = literalWordValue(node.name)
      if (name !== undefined && normalizeProgramName(name) === 'lango') record(scope, 'function')
      // Remembered so a call with arguments is checked with its `$1 $2 …` (`f lan go` for `f() { $1$2; }`).
      if (name !== undefined && scope.state.functions.size < MAX_DEFINITIONS)
        scope.state.functions.set(name, scope.text.slice(node.body.pos, node.body.end))
      break
    }
    case 'Redirected': {
      const redirected = redirectInputs(node.redirects)
      walk(node.command, scope, redirected === undefined ? input : [...(input ?? []), ...redirected])
      for (const redirect of node.redirects) walk(redirect, scope, undefined)
      return
    }
    case 'Assignment':
      checkVariableAssignment(node, scope)
      break
    case 'ArithmeticCommand':
      // bash reads `((cmd))` as arithmetic, but dash and other POSIX shells run it as nested subshells.
      analyzeSource(node.body, scope, scope.state, scope.positional)
      break
    case 'Word':
      if (!NESTED_CODE.test(node.text)) return
      break
    case 'HereDocBody':
      if (node.parts === undefined || !/[$`]/.test(node.text)) return
      break
    case 'CommandExpansion':
    case 'ProcessSubstitution':
    case 'ArithmeticCommandExpansion':
      forEachChild(node, (child) => walk(child, scope, undefined))
      return
  }
  forEachChild(node, (child) => walk(child, scope, input))
}

/** The parser stops descending past its nesting limit; what lies deeper is unseen, so fail closed. */
function exceedsParserNesting(script: ParsedScript): boolean {
  return script.errors?.some((error) => error.message.includes('nesting depth exceeded')) ?? false
}

function walkPipeline(node: Pipeline, scope: Scope, input: readonly string[] | undefined): void {
  let piped = input
  for (const stage of node.commands) {
    walk(stage, scope, piped)
    if (scope.state.finding !== undefined) return
    piped = nextPipelineOutputs(stage, piped)
  }
}

function wordArgument(word: Word): Argument {
  return { literal: literalWordValue(word), loose: word.value, word }
}

function assignmentArgument(assignment: Assignment): Argument {
  const prefix = `${assignment.name}${assignment.append ? '+=' : '='}`
  const value = assignment.value
  const literal = value.type === 'Word' ? literalWordValue(value) : undefined
  return {
    literal: literal === undefined ? undefined : prefix + literal,
    loose: value.type === 'Word' ? prefix + value.value : assignment.text,
    word: undefined,
  }
}

function analyzeCommand(command: Command, scope: Scope, piped: readonly string[] | undefined): void {
  const name = command.name
  if (name === undefined) return
  const argv: Argument[] = [wordArgument(name)]
  for (const argument of command.suffix) {
    if (argument.type === 'Word') argv.push(wordArgument(argument))
    else if (argument.type === 'Assignment') argv.push(assignmentArgument(argument))
  }
  let texts = piped
  let file: Argument | undefined
  const redirected = redirectInputs(command.redirects)
  if (redirected !== undefined) texts = [...(texts ?? []), ...redirected]
  for (const redirect of command.redirects) {
    const fromStdin =
      redirect.descriptor === undefined ||
      (redirect.descriptor.type === 'FileDescriptor' && redirect.descriptor.value === 0)
    if (
      redirect.type === 'Redirect' &&
      (redirect.operator === '<' || redirect.operator === '<>') &&
      fromStdin
    ) {
      if (redirect.target !== undefined) file = wordArgument(redirect.target)
    }
  }
  recordWrites(command, argv, scope, piped)
  recordAliases(argv, scope)
  analyzeArgv(argv, scope, texts === undefined && file === undefined ? NO_INPUT : { texts, file }, 0)
}

const WRITE_OPERATORS = new Set(['>', '>>', '>|', '&>', '&>>'])
const COPY_PROGRAMS = new Set(['ln', 'cp', 'mv', 'install', 'link'])

/**
 * Remembers what this command writes, for the write-then-run cases of §6.2 item 6: files whose
 * content the text shows (`echo 'lango cron' > run.sh`, `… | tee run.sh`) and copies or links of a
 * lango binary (`ln -s "$(which lango)" x`). Order-sensitive: only later commands see them.
 */
function recordWrites(
  command: Command,
  argv: readonly Argument[],
  scope: Scope,
  piped: readonly string[] | undefined,
): void {
  const { files, aliases } = scope.state
  const name = argv[0]?.literal === undefined ? undefined : normalizeProgramName(argv[0].literal)
  for (const redirect of command.redirects) {
    if (
      redirect.type !== 'Redirect' ||
      !WRITE_OPERATORS.has(redirect.operator) ||
      redirect.target === undefined
    )
      continue
    const descriptor = redirect.descriptor
    if (descriptor !== undefined && !(descriptor.type === 'FileDescriptor' && descriptor.value === 1))
      continue
    const target = literalWordValue(redirect.target)
    const outputs = nextPipelineOutputs(command, piped)
    if (target !== undefined && outputs !== undefined) files.set(fileKey(target), outputs)
  }
  if (name === 'tee' && piped !== undefined) {
    for (const argument of argv.slice(1)) {
      if (argument.literal !== undefined && !argument.literal.startsWith('-'))
        files.set(fileKey(argument.literal), piped)
    }
  }
  if (name !== undefined && COPY_PROGRAMS.has(name)) {
    const operands = argv.slice(1).filter((argument) => !(argument.literal ?? '').startsWith('-'))
    const target = operands.at(-1)?.literal
    const copiesLango = operands
      .slice(0, -1)
      .some((source) =>
        source.literal !== undefined
          ? normalizeProgramName(source.literal) === 'lango'
          : namesLango(stripShellQuoting(source.loose)) ||
            (source.word !== undefined && matchLango(wordPatterns(source.word, scope)) === 'static'),
      )
    if (target !== undefined && copiesLango) aliases.add(normalizeProgramName(target))
  }
}

/** `alias name=value …`: remembered for later commands named `name`. */
function recordAliases(argv: readonly Argument[], scope: Scope): void {
  if (argv[0]?.literal !== 'alias') return
  for (const argument of argv.slice(1)) {
    const [name, value] = splitOnce(argument.loose, '=')
    if (value !== undefined && name !== '' && scope.state.shellAliases.size < MAX_DEFINITIONS)
      scope.state.shellAliases.set(name, value)
  }
}

function fileKey(path: string): string {
  return path.replace(/^(?:\.\/)+/, '')
}

/** Assignments to variables a shell or tool runs (`PS4='$(lango)'`, `GIT_SSH_COMMAND=lango`). */
function checkVariableAssignment(assignment: Assignment, scope: Scope): void {
  const kind = variableRunKind(assignment.name)
  if (kind === undefined || assignment.value.type !== 'Word') return
  const value = assignment.value.value
  if (kind === 'file') checkScript({ path: textArgument(value), args: [], kind: 'shell' }, scope)
  else analyzeSource(value.replace(/^\|/, ''), scope, scope.state, scope.positional)
}

function analyzeArgv(argv: readonly Argument[], scope: Scope, input: Input, hops: number): void {
  if (scope.state.finding !== undefined) return
  if (hops > MAX_RUNNER_HOPS) {
    record(scope, 'too-complex')
    return
  }
  const head = argv[0]
  if (head === undefined) return
  // Runners may report several readings of their argv; charge each one so a crafted chain of them
  // (`nice --x nice nice --x …`) runs out of budget and blocks instead of branching without end.
  scope.charge(argv.length + 1)
  const program = resolveProgram(head, scope)
  if (head.literal !== undefined) {
    for (const text of scope.state.files.get(fileKey(head.literal)) ?? [])
      analyzeSource(text, scope, scope.state, undefined)
    expandDefinitions(head.literal, argv, scope)
    if (scope.state.finding !== undefined) return
  }
  if (program.names.some((name) => scope.state.aliases.has(name))) {
    record(scope, 'command', subcommandOf(argv.slice(1)))
    return
  }
  if (program.lango === 'static') {
    record(scope, 'command', subcommandOf(argv.slice(1)))
    return
  }
  // `$x lango`, `"$@" lango`: a head that can expand to no field leaves the next word in command position.
  if (head.literal === undefined && head.word !== undefined && argv.length > 1) {
    if (canVanish(head.word, scope, scope.state.nullglob)) analyzeArgv(argv.slice(1), scope, input, hops + 1)
    if (scope.state.finding !== undefined) return
  }
  if (program.lango === 'dynamic' && scope.holdsLango) {
    record(scope, 'ambiguous')
    return
  }
  for (const name of program.names) {
    const result = runnerFor(name)?.(argv, input.texts)
    if (result !== undefined) applyRunner(result, scope, input, hops)
    if (scope.state.finding !== undefined) return
  }
}

/**
 * A call of a function or an alias the text defines: the alias value is read with the arguments
 * appended (dash and interactive shells expand aliases), the function body with them as `$1 $2 …`.
 */
function expandDefinitions(name: string, argv: readonly Argument[], scope: Scope): void {
  const { shellAliases, functions, expanding } = scope.state
  const alias = shellAliases.get(name)
  const key = `alias ${name}`
  if (alias !== undefined && !expanding.has(key)) {
    expanding.add(key)
    analyzeSource(`${alias} ${joinLoose(argv.slice(1))}`, scope, scope.state, scope.positional)
    expanding.delete(key)
  }
  const body = functions.get(name)
  const call = `function ${name}`
  if (body !== undefined && !expanding.has(call) && argv.length > 1) {
    expanding.add(call)
    analyzeSource(
      body,
      scope,
      scope.state,
      argv.map((argument) => argument.literal ?? argument.loose),
    )
    expanding.delete(call)
  }
}

function resolveProgram(
  head: Argument,
  scope: Scope,
): { lango: 'static' | 'dynamic' | undefined; names: readonly string[] } {
  if (head.literal !== undefined) {
    const name = normalizeProgramName(head.literal)
    return name === 'lango' ? { lango: 'static', names: [] } : { lango: undefined, names: [name] }
  }
  if (head.word === undefined) return { lango: undefined, names: [] }
  const patterns = wordPatterns(head.word, scope)
  const names = new Set<string>()
  for (const pattern of patterns) {
    // `s$()udo lango`: the name its possibly empty expansions leave behind may be a runner.
    const text = emptiedText(pattern)
    if (text !== undefined && text !== '') names.add(normalizeProgramName(text))
    if (names.size >= 4) break
  }
  return { lango: matchLango(patterns), names: [...names] }
}

function applyRunner(result: RunnerResult, scope: Scope, input: Input, hops: number): void {
  const state = scope.state
  const commands = result.commands ?? []
  // Readings a runner reports are work too: charge them before following any.
  scope.charge(commands.reduce((total, inner) => total + inner.length, 0))
  for (const inner of commands) analyzeArgv(inner, scope, input, hops + 1)
  for (const code of result.shellCode ?? [])
    analyzeSource(code.text, scope, state, code.positional ?? scope.positional)
  for (const code of result.interpreterCode ?? []) checkInterpreterCode(code, scope)
  // A command computed at run time (`awk '{system($2)}'`) is judged like a command word it cannot resolve.
  if (result.computed === true && scope.holdsLango) record(scope, 'ambiguous')
  for (const run of result.scripts ?? []) checkScript(run, scope)
  if (result.stdin === 'shell') {
    for (const text of input.texts ?? []) analyzeSource(text, scope, state, undefined)
    if (input.file !== undefined) checkScript({ path: input.file, args: [], kind: 'shell' }, scope)
  } else if (result.stdin === 'code') {
    for (const text of input.texts ?? []) checkInterpreterCode(text, scope)
    if (input.file !== undefined) checkScript({ path: input.file, args: [], kind: 'code' }, scope)
  }
}

function checkInterpreterCode(code: string, scope: Scope): void {
  // Strings such code hands to a shell may split the name with empty expansions too (`'lan$()go'`).
  if (namesLango(code)) {
    record(scope, 'interpreter-code', wordAfterLango(code) ?? wordAfterLango(removeEmptyExpansions(code)))
  }
}

function checkScript(run: ScriptRun, scope: Scope): void {
  const path = run.path
  if (path.literal !== undefined) {
    const name = normalizeProgramName(path.literal)
    if (name === 'lango' || scope.state.aliases.has(name)) {
      record(scope, 'script', subcommandOf(run.args))
      return
    }
    for (const text of scope.state.files.get(fileKey(path.literal)) ?? []) {
      if (run.kind === 'shell') analyzeSource(text, scope, scope.state, undefined)
      else if (run.kind === 'code') checkInterpreterCode(text, scope)
    }
    return
  }
  const word = path.word
  if (word === undefined) return
  const only = word.parts?.length === 1 ? word.parts[0] : undefined
  if (only?.type === 'ProcessSubstitution' && only.operator === '<') {
    // `bash <(echo …)`: the script is the substitution's output.
    for (const text of scriptOutputs(only.script) ?? []) {
      if (run.kind === 'shell') analyzeSource(text, scope, scope.state, undefined)
      else if (run.kind === 'code') checkInterpreterCode(text, scope)
    }
    return
  }
  const lango = matchLango(wordPatterns(word, scope))
  if (lango === 'static') record(scope, 'script', subcommandOf(run.args))
  else if (lango === 'dynamic' && scope.holdsLango) record(scope, 'ambiguous')
}

/** The first operand after lango's global options, lower-cased; `undefined` when not fixed by the text. */
function subcommandOf(args: readonly Argument[]): string | undefined {
  for (let index = 0; index < args.length; index++) {
    const text = args[index]?.literal
    if (text === undefined) return undefined
    const lower = text.toLowerCase()
    if (lower === '--') return args[index + 1]?.literal?.toLowerCase()
    if (lower.length > 1 && lower.startsWith('-')) {
      if (!lower.includes('=') && LANGO_VALUE_OPTIONS.has(lower)) index++
      continue
    }
    return lower
  }
  return undefined
}

/** The variable a nameref names (`c`, `a[1]`), when the text fixes it. */
function referenceTarget(word: Word): { name: string; index: number | undefined } | undefined {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9]+)\])?$/.exec(literalWordValue(word) ?? '')
  if (match === null) return undefined
  const name = match[1] as string
  return { name, index: match[2] === undefined ? undefined : Number(match[2]) }
}

/** The assignments of a script (see `variables.ts`), cached per parsed script. */
function variablesOf(
  script: ParsedScript,
  cache: Map<ParsedScript, ReadonlyMap<string, readonly ValueSource[]>>,
): ReadonlyMap<string, readonly ValueSource[]> {
  const cached = cache.get(script)
  if (cached !== undefined) return cached
  const variables = collectVariables(script)
  cache.set(script, variables)
  return variables
}
