import { describe, expect, it } from 'vitest'
import {
  BENIGN,
  EMPTY_SPLITS,
  type Evasion,
  OUT_OF_REACH,
  RUNNER_EVASIONS,
  SPLIT_EVASIONS,
  WORD_SHAPE_EVASIONS,
} from '../../test/fixtures/guard-corpus.js'
import { awkCommands } from './awk-program.js'
import { classifyLangoExec } from './index.js'
import { options, optionsNamed, parseArgv, textArgument } from './option-parser.js'

/**
 * The large evasion and benign-command corpus of issue 11 (findings 3 and 4). Every statically
 * decidable case must be right: each evasion blocks (with the phase-1 subcommand where the text fixes
 * it), each benign command is allowed. `guard-oracle.test.ts` checks the corpus against bash itself.
 */

function expectBlocked([command, subcommand]: Evasion): void {
  const verdict = classifyLangoExec(command)
  expect(verdict.verdict, command).toBe('block')
  if (subcommand !== undefined) expect(verdict, command).toMatchObject({ phase: 1, subcommand })
}

describe('corpus size', () => {
  it('holds hundreds of evasions and hundreds of benign commands', () => {
    expect(SPLIT_EVASIONS.length + WORD_SHAPE_EVASIONS.length + RUNNER_EVASIONS.length).toBeGreaterThan(1000)
    expect(RUNNER_EVASIONS.length).toBeGreaterThan(400)
    expect(BENIGN.length).toBeGreaterThan(300)
    expect(new Set(BENIGN).size).toBe(BENIGN.length)
    expect(new Set(RUNNER_EVASIONS.map(([command]) => command)).size).toBe(RUNNER_EVASIONS.length)
  })
})

describe('finding 3: a name split by expansions that can be empty', () => {
  it.each(SPLIT_EVASIONS.map((evasion) => [evasion[0], evasion] as const))('blocks %s', (_command, evasion) =>
    expectBlocked(evasion),
  )
  it.each(WORD_SHAPE_EVASIONS.map((evasion) => [evasion[0], evasion] as const))(
    'blocks %s',
    (_command, evasion) => expectBlocked(evasion),
  )
  it.each(EMPTY_SPLITS)('still allows %s as an argument and a file name', (word) => {
    for (const command of [`echo ${word}`, `cat ${word}.yaml`, `ls -l ${word}`, `grep x ${word}`]) {
      expect(classifyLangoExec(command), command).toEqual({ verdict: 'allow' })
    }
  })
  it.each(EMPTY_SPLITS.filter((word) => /^l/i.test(word)))(
    'does not turn the my-, -helper, .sh and _test forms of %s into lango',
    (word) => {
      for (const command of [`my${word} cron`, `${word}-helper cron`, `${word}.sh`, `${word}_test cron`]) {
        expect(classifyLangoExec(command), command).toEqual({ verdict: 'allow' })
      }
    },
  )
})

describe('finding 4: runners with their option syntaxes', () => {
  it.each(RUNNER_EVASIONS.map((evasion) => [evasion[0], evasion] as const))(
    'blocks %s',
    (_command, evasion) => expectBlocked(evasion),
  )
})

describe('benign commands', () => {
  it.each(BENIGN)('allows %s', (command) => {
    expect(classifyLangoExec(command)).toEqual({ verdict: 'allow' })
  })
})

describe('documented limits: names built at run time', () => {
  // A static reading cannot know these; guard-oracle.test.ts shows bash runs lango for each. Catching
  // one later is welcome: move it to the evasion tables.
  it.each(OUT_OF_REACH)('is out of reach of the static guard: %s', (command) => {
    expect(classifyLangoExec(command)).toEqual({ verdict: 'allow' })
  })
})

describe('option parser', () => {
  const timeout = options('+k:s:v', 'kill-after= signal= verbose foreground preserve-status help version')
  const argv = (text: string) => text.split(' ').map(textArgument)

  it('reads clusters, attached and separate values, abbreviations and --', () => {
    expect(parseArgv(argv('timeout -vk 1 5 cmd'), timeout)[0]?.operands).toEqual([3, 4])
    expect(parseArgv(argv('timeout -k1 5 cmd'), timeout)[0]?.operands).toEqual([2, 3])
    expect(parseArgv(argv('timeout --sig KILL 5 cmd'), timeout)[0]?.operands).toEqual([3, 4])
    expect(parseArgv(argv('timeout --signal=KILL 5 cmd'), timeout)[0]?.operands).toEqual([2, 3])
    expect(parseArgv(argv('timeout -- -5 cmd'), timeout)[0]?.operands).toEqual([2, 3])
    const reading = parseArgv(argv('timeout --sig KILL 5 cmd'), timeout)[0]
    expect(reading === undefined ? [] : optionsNamed(reading, ['--signal'])[0]?.values[0]?.literal).toBe(
      'KILL',
    )
  })

  it('takes optional values only when attached', () => {
    const prlimit = options('+n::p:', 'nofile=? pid=')
    expect(parseArgv(argv('prlimit -n 10 cmd'), prlimit)[0]?.operands).toEqual([2, 3])
    expect(parseArgv(argv('prlimit -n10 cmd'), prlimit)[0]?.operands).toEqual([2])
    expect(parseArgv(argv('prlimit --nofile 10 cmd'), prlimit)[0]?.operands).toEqual([2, 3])
  })

  it('follows every reading of an unknown or ambiguous long option', () => {
    const readings = parseArgv(argv('timeout --future 5 cmd'), timeout)
    expect(readings.map((reading) => reading.operands[0]).sort()).toEqual([2, 3])
    const setpriv = options('+d', 'reuid= regid= reset-env')
    expect(parseArgv(argv('setpriv --re 0 cmd'), setpriv).length).toBe(2)
  })

  it('permutes when the program does', () => {
    const su = options('c:s:l', 'command= shell= login', { permute: true })
    const [reading] = parseArgv(argv('su root -c cmd -l'), su)
    expect(reading?.operands).toEqual([1])
    expect(reading === undefined ? [] : optionsNamed(reading, ['-c']).length).toBe(1)
  })
})

describe('awk programs', () => {
  it.each([
    ['/lango/ {print}', [], false],
    ['$1=="lango"{print $2}', [], false],
    ['/lango|x/ { print | "sort" }', ['sort'], false],
    ['BEGIN { system("lango cron") }', ['lango cron'], false],
    ['BEGIN { "lan" "go cron" | getline x }', ['lango cron'], false],
    ['{ print $0 | "lango " "cron" }', ['lango cron'], false],
    ['BEGIN { system("\\154ango") }', ['lango'], false],
    ['{ system($2) }', [], true],
    ['BEGIN { cmd = "lango"; cmd | getline }', [], true],
    ['BEGIN { f = "system"; @f("lango") }', [], true],
    ['{ a = $1 / 2; b = /x|y/ } # system("lango")', [], false],
  ] as const)('awkCommands(%j)', (program, shellCode, computed) => {
    expect(awkCommands(program)).toEqual({ shellCode, computed })
  })
})
