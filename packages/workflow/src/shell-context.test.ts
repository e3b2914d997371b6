import { describe, expect, it } from 'vitest'
import { parseWorkflow } from './parse-workflow.js'
import { findUnsafeReferences } from './shell-context.js'
import { scanTemplates } from './template.js'

/** The issue codes of a two-step workflow whose second step has `field: command`. */
function codesFor(command: string, field: 'run' | 'when' = 'run'): string[] {
  const second =
    field === 'run' ? `run: ${JSON.stringify(command)}` : `when: ${JSON.stringify(command)}\n    run: "true"`
  const parsed = parseWorkflow(
    `name: q\nsteps:\n  - { id: a, run: "true" }\n  - id: b\n    depends_on: [a]\n    ${second}\n`,
  )
  return parsed.ok ? [] : parsed.issues.map((issue) => `${issue.path} ${issue.code}`)
}

// Bash (the `/bin/sh` of macOS, Fedora, Arch) evaluates names with subscripts and arithmetic, so a
// value such as `a[$(touch /tmp/F)]` runs code there although it is one single-quoted word.
const REFUSED: readonly (readonly [string, string])[] = [
  // Placeholders inside `[[ … ]]`, `(( … ))`, `$[ … ]`.
  ['[[ -gt', '[[ {{a.result}} -gt 0 ]] && echo positive'],
  ['[[ -v', '[[ -v {{a.result}} ]]'],
  ['[[ ==', '[[ {{a.result}} == x ]]'],
  ['(( ))', '(( {{a.result}} > 0 ))'],
  ['for (( ))', 'for ((i = 0; i < {{a.result}}; i++)); do :; done'],
  ['$[ ]', 'echo $[ {{a.result}} + 1 ]'],
  // Arguments of builtins that take names or arithmetic.
  ['let', 'let n={{a.result}}'],
  ['let (bare)', 'let {{a.result}}'],
  ['declare -i', 'declare -i n={{a.result}}'],
  ['declare -n', 'declare -n r={{a.result}}; echo "$r"'],
  ['declare -a', 'declare -a b={{a.result}}'],
  ['declare name', 'declare {{a.result}}'],
  ['declare name=', 'declare {{a.result}}=1'],
  ['declare --', 'declare -- n={{a.result}}'],
  ['typeset -i', 'typeset -i n={{a.result}}'],
  ['local -i', 'f() { local -i n={{a.result}}; }; f'],
  ['local name', 'f() { local {{a.result}}; }; f'],
  ['export name', 'export {{a.result}}'],
  ['readonly name', 'readonly {{a.result}}'],
  ['unset', 'unset {{a.result}}'],
  ['unset -v', 'unset -v {{a.result}}'],
  ['read', 'read {{a.result}} </dev/null'],
  ['read -r', 'read -r {{a.result}} </dev/null'],
  ['mapfile', 'mapfile {{a.result}} </dev/null'],
  ['readarray', 'readarray {{a.result}} </dev/null'],
  ['getopts', 'getopts ab {{a.result}}'],
  ['printf -v name', 'printf -v {{a.result}} x'],
  ['printf -v value', "printf -v n '%s' {{a.result}}"],
  ['test -v', 'test -v {{a.result}} || echo no'],
  ['test -R', 'test -R {{a.result}}'],
  ['[ -v', '[ -v {{a.result}} ]'],
  ['wait -p', 'sleep 1 & wait -p {{a.result}}'],
  ['eval', 'eval echo {{a.result}}'],
  ['trap', 'trap {{a.result}} EXIT'],
  ['builtin let', 'builtin let n={{a.result}}'],
  ['command declare -i', 'command declare -i n={{a.result}}'],
  ['quoted let', "'let' n={{a.result}}"],
  ['escaped let', '\\let n={{a.result}}'],
  ['let in a case branch', 'case x in x) let n={{a.result}};; esac'],
  ['let in a case branch in $(…)', 'echo $(case x in x) let n={{a.result}};; esac)'],
  // The value reaches a name or arithmetic context through a variable, `$1` or a pipe.
  ['${!x}', 'x={{a.result}}; echo ${!x}'],
  ['"${!x}"', 'x={{a.result}}; echo "${!x}"'],
  ['${!x} after', 'echo {{a.result}} ${!HOME}'],
  ['$(( x ))', 'x={{a.result}}; echo $((x + 1))'],
  ['$(( $1 ))', 'f() { echo $(( $1 )); }; f {{a.result}}'],
  ['read | (( ))', 'echo {{a.result}} | { read -r n; (( n > 0 )); }'],
  ['[[ $x -eq ]]', 'x={{a.result}}; [[ $x -eq 1 ]]'],
  ['${s:x}', 'x={{a.result}}; s=abc; echo ${s:x}'],
  ['${a[x]}', 'x={{a.result}}; echo ${a[x]}'],
  ['${x@P}', 'x={{a.result}}; echo ${x@P}'],
  ['a[x]=', 'x={{a.result}}; a[x]=1'],
  ['a=( )', 'x={{a.result}}; b=([x]=1)'],
  ['declare -i then assign', 'x={{a.result}}; declare -i n; n=$x'],
  ['local "$x"=', 'x={{a.result}}; f() { local "$x"=1; }; f'],
  ['unset "$x"', 'x={{a.result}}; unset "$x"'],
  ['eval "$x"', 'x={{a.result}}; eval "echo $x"'],
  ['RANDOM=', 'RANDOM={{a.result}}'],
  ['OPTIND=', 'OPTIND={{a.result}}'],
  ['PS4=', 'PS4={{a.result}}; set -x; :'],
  ['read OPTIND', 'echo {{a.result}} | { read -r OPTIND; }'],
  ['for OPTIND', 'for OPTIND in {{a.result}}; do :; done'],
  ['backtick body', 'echo `echo $((n))` {{a.result}}'],
  ['heredoc body', 'n={{a.result}}; cat <<EOF\n$((n))\nEOF'],
  // The value would choose the command.
  ['command name', '{{a.result}}'],
  ['command name and argument', '{{a.result}} x'],
  ['computed command name', '$CMD {{a.result}}'],
  // `coproc` runs the command after it, like `builtin`/`command`/`time`.
  ['coproc read', 'coproc read {{a.result}}'],
  ['coproc let', 'coproc let n={{a.result}}'],
  ['coproc NAME { read }', 'coproc R { read {{a.result}}; }'],
  ['coproc name', 'coproc {{a.result}}'],
  // A nested shell's command string (or `eval`'s script) that evaluates: the value reaches it through
  // the environment or a pipe.
  ['bash -c $(( ))', "v={{a.result}} bash -c 'echo $((v))'"],
  ['| bash -c read; $(( ))', "echo {{a.result}} | bash -c 'read v; echo $((v))'"],
  ['| sh -c read; [[ ]]', "echo {{a.result}} | sh -c 'read v; [[ $v -gt 1 ]]'"],
  ['/bin/sh -ec let', 'export v={{a.result}}; /bin/sh -ec "let n=v"'],
  ['sudo zsh -c (( ))', "echo {{a.result}} | sudo -E zsh -c '(( $(cat) > 1 ))'"],
  ['bash -c "bash -c"', 'v={{a.result}} bash -c "bash -c \'echo \\$((v))\'"'],
  ["eval '$(( ))'", "v={{a.result}}; eval 'echo $((v))'"],
  ['bash -c $(( )) elsewhere in the command', "bash -c 'echo $((n))'; echo {{a.result}}"],
]

// Placements that stay accepted: the value is an ordinary argument or a plain assignment.
const ACCEPTED: readonly string[] = [
  'echo {{a.result}}',
  "printf '%s\\n' {{a.result}}",
  'printf %s {{a.result}} | wc -c',
  "printf '%d' {{a.result}}",
  'grep -c {{a.result}} file',
  'n={{a.result}}',
  'X={{a.result}}; echo "$X"',
  'cmd --flag={{a.result}}',
  'echo $(cat {{a.result}})',
  'echo $(basename {{a.result}})',
  'declare n={{a.result}}',
  'export TITLE={{a.result}}; ./script.sh',
  'f() { local n={{a.result}}; echo "$n"; }; f',
  'test -n {{a.result}}',
  'test {{a.result}} -eq 0',
  '[ {{a.result}} = x ]',
  '[ "$x" -eq 1 ] && echo {{a.result}}',
  'expr {{a.result}} + 1',
  'echo [{{a.result}}]',
  'echo ran >> b.log && echo beta-{{a.result}}',
  'printf \'%s\\n\' {{a.result}} | while read -r line; do echo "$line"; done',
  'for f in {{a.result}}; do echo "$f"; done',
  'echo {{a.result}} > out.txt 2>&1',
  'read -r line < {{a.result}}',
  'echo ${HOME} "${x:-default}" ${x:-$HOME} {{a.result}}',
  "grep '[[:space:]]' {{a.result}}",
  'npm test {{a.result}}',
  'docker export {{a.result}}',
  'shift {{a.result}}',
  'exit {{a.result}}',
  'time echo {{a.result}}',
  '! grep -q x {{a.result}}',
  'if [ -n {{a.result}} ]; then echo yes; fi',
  // A nested shell whose script evaluates nothing: plain data into a shell. (One whose script
  // evaluates taints the whole `run` command, like any command-wide construct: see REFUSED.)
  "echo {{a.result}} | sh -c 'cat'",
  "bash -c 'echo hi'; echo {{a.result}}",
  'v={{a.result}} bash -c \'printf "%s\\n" "$v"\'',
  "printf '%s\\n' {{a.result}} | bash -c 'while read -r line; do echo \"$line\"; done'",
]

describe('findUnsafeReferences: where bash evaluates names and arithmetic', () => {
  it.each(REFUSED)('refuses %s in a run command', (_, command) => {
    const codes = codesFor(command)
    expect(codes.length, command).toBeGreaterThan(0)
    expect(new Set(codes), command).toEqual(new Set(['steps[1].run template_unsafe_context']))
  })

  it.each(REFUSED)('refuses %s in a when gate', (_, command) => {
    expect(new Set(codesFor(command, 'when')), command).toEqual(
      new Set(['steps[1].when template_unsafe_context']),
    )
  })

  it.each(REFUSED)('refuses %s with {{trigger.payload}}', (_, command) => {
    const payload = command.replaceAll('{{a.result}}', '{{trigger.payload}}')
    const references = scanTemplates(payload).triggers
    expect(references.length).toBeGreaterThan(0)
    expect(findUnsafeReferences(payload, references).length, payload).toBeGreaterThan(0)
  })

  it.each(ACCEPTED)('accepts %s', (command) => {
    expect(codesFor(command), command).toEqual([])
    expect(codesFor(command, 'when'), command).toEqual([])
  })

  it('refuses every placeholder of a command with an evaluating construct, and says what to do', () => {
    const parsed = parseWorkflow(
      'name: q\nsteps:\n  - { id: a, run: "true" }\n  - id: b\n    depends_on: [a]\n    run: "echo {{a.result}}; x={{a.result}}; echo ${!x}"\n',
    )
    expect(parsed.ok).toBe(false)
    if (parsed.ok) return
    expect(parsed.issues).toHaveLength(2)
    const message = parsed.issues[0]?.message ?? ''
    expect(message).toMatch(/^\{\{a\.result\}\} must stand unquoted in the command/)
    expect(message).toContain('bash')
    expect(message).toContain('printf -v')
    expect(message).toContain("Pass it to a command that treats it as data (echo, printf '%s'")
  })

  it('stays linear on long hostile commands', () => {
    for (const unit of ['$(', 'a[', '`', '${x:-', 'a) let ', "$'\\'", '(', ') ', '<<']) {
      const command = `${unit.repeat(Math.ceil(16384 / unit.length)).slice(0, 16384)} {{a.result}}`
      const started = performance.now()
      findUnsafeReferences(command, scanTemplates(command).references)
      expect(performance.now() - started, unit).toBeLessThan(1000)
    }
  })
})
