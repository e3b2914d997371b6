import { type Argument, options, type ParsedArgv, textArgument } from '../option-parser.js'
import { byReading, joinLoose, type Runner } from '../runner-kit.js'

/**
 * Argument builders: `xargs`, `find -exec`, `fd -x` and GNU `parallel`, which run a command once per
 * input line or result.
 */

const XARGS = options(
  '+0a:E:e::i::I:l::L:n:prs:txP:d:oJ:R:S:',
  'null arg-file= delimiter= eof=? replace=? max-lines=? max-args= max-procs= open-tty interactive ' +
    'no-run-if-empty max-chars= verbose exit show-limits process-slot-var= help version',
)

/** Most substituted values tried per `xargs`/`parallel` call; each becomes one command to check. */
const MAX_SUBSTITUTIONS = 16

/** Longest text a substitution may produce (`{}{}{}…` times a long line would multiply the input). */
const MAX_SUBSTITUTED_LENGTH = 64 * 1024

/** `text` with every `search` replaced by `value`; just `value` when the result would be too long. */
function substitute(text: string, search: string, value: string): string {
  const count = text.split(search).length - 1
  return count * value.length > MAX_SUBSTITUTED_LENGTH ? value : text.replaceAll(search, value)
}

function inputLines(input: readonly string[] | undefined): string[] {
  return (input ?? []).flatMap((text) => text.split('\n')).filter((line) => line.trim() !== '')
}

/** The replace string of `xargs -I R`, `-i[R]`, `--replace[=R]` or BSD `-J R`, if any. */
function xargsReplaceString(reading: ParsedArgv): string | undefined {
  for (const option of reading.options) {
    const value = option.values[0]?.literal
    if (option.key === '-I' || option.key === '-J') return value
    if (option.key === '-i' || option.key === '--replace') return value ?? '{}'
  }
  return undefined
}

const xargs = byReading(XARGS, (reading, argv, input) => {
  const start = reading.operands[0]
  const inner = start === undefined ? [] : argv.slice(start)
  const commands: (readonly Argument[])[] = [inner]
  const replace = xargsReplaceString(reading)
  // `xargs -I{} {} …`: the program is each input line, a command word fixed only at run time.
  const computed = replace !== undefined && replace !== '' && inner[0]?.loose.includes(replace) === true
  // What arrives on stdin becomes arguments: `echo lango | xargs sh -c` runs `sh -c lango`.
  for (const line of inputLines(input).slice(0, MAX_SUBSTITUTIONS)) {
    if (replace !== undefined && replace !== '') {
      commands.push(
        inner.map((argument) => ({
          literal: argument.literal === undefined ? undefined : substitute(argument.literal, replace, line),
          loose: substitute(argument.loose, replace, line),
          word: undefined,
        })),
      )
    } else {
      const words = line.trim().split(/\s+/).map(textArgument)
      commands.push([...(inner.length > 0 ? inner : [textArgument('echo')]), ...words])
    }
  }
  return { commands, computed }
})

const FIND_ACTIONS = new Set(['-exec', '-execdir', '-ok', '-okdir'])

const find: Runner = (argv) => {
  const commands: Argument[][] = []
  let computed = false
  for (let index = 1; index < argv.length; index++) {
    if (!FIND_ACTIONS.has(argv[index]?.literal ?? '')) continue
    let end = index + 1
    while (end < argv.length && argv[end]?.literal !== ';' && argv[end]?.literal !== '+') end++
    const inner = argv.slice(index + 1, end)
    // `-exec {} …`, `-exec ./{} …`: the program is each file found, a command word fixed only at run time.
    if (inner[0]?.loose.includes('{}') === true) computed = true
    commands.push(inner)
    index = end
  }
  return { commands, computed }
}

/** fd (`fdfind`): `-x CMD…` / `-X CMD…` run the rest of the line (up to `;`) for the results. */
const fd: Runner = (argv) => {
  const commands: Argument[][] = []
  for (let index = 1; index < argv.length; index++) {
    const text = argv[index]?.literal ?? ''
    if (!/^(?:-x|-X|--exec|--exec-batch)$/.test(text)) continue
    let end = index + 1
    while (end < argv.length && argv[end]?.literal !== ';') end++
    commands.push(argv.slice(index + 1, end))
    index = end
  }
  return { commands }
}

const PARALLEL = options(
  '0a:b:d:E:I:i::j:kl::L:m:n:N:P:qrS:s:tuvVxX',
  'null arg-file= arg-file-sep= arg-sep= basefile= bf= block= block-size= colsep= delimiter= ' +
    'env= eof=? halt= header= jobs= joblog= load= max-args= max-chars= max-lines= max-procs= ' +
    'max-replace-args= memfree= nice= replace=? results= res= retries= sshlogin= S= sshloginfile= ' +
    'slf= tag-string= tagstring= timeout= tmpdir= workdir= wd= delay= rpl= profile= semaphorename= ' +
    'id= fifo cat pipe pipepart quote keep-order group ungroup line-buffer tag dry-run verbose ' +
    'semaphore bg fg shebang shebang-wrap no-run-if-empty',
)

const parallel = byReading(PARALLEL, (reading, argv, input) => {
  const start = reading.operands[0] ?? argv.length
  let separator = start
  while (separator < argv.length && !/^::::?\+?$/.test(argv[separator]?.literal ?? '')) separator++
  const template = joinLoose(argv.slice(start, separator))
  const values =
    separator < argv.length
      ? argv
          .slice(separator + 1)
          .filter((argument) => !/^::::?\+?$/.test(argument.literal ?? ''))
          .map((argument) => argument.loose)
      : inputLines(input)
  // Each value fills `{}` in the template, or is appended; with no template each value is a command.
  const commands = values
    .slice(0, MAX_SUBSTITUTIONS)
    .map((value) =>
      template === ''
        ? value
        : template.includes('{}')
          ? substitute(template, '{}', value)
          : `${template} ${value}`,
    )
  if (template !== '') commands.push(template)
  return { shellCode: commands.map((text) => ({ text })) }
})

export const ARGUMENT_BUILDER_RUNNERS: readonly [readonly string[], Runner][] = [
  [['xargs'], xargs],
  [['find'], find],
  [['fd', 'fdfind'], fd],
  [['parallel', 'sem'], parallel],
]
