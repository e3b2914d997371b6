import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempDir } from './__fixtures__/helpers.js'
import { checkSecretPlacement, ExecError, locateRefTokens, MemoryRefStore, run } from './index.js'

// Bash (the `/bin/sh` of macOS, Fedora, Arch) evaluates names with subscripts and arithmetic, and
// a subscript's `$(…)` runs: a value such as `a[$(touch F)]` is code there even as `"${VAR}"`.

/** Commands where bash would evaluate a value token, and the context `data.by` names. */
const REFUSED: ReadonlyArray<readonly [string, string]> = [
  // Arithmetic: `$(( ))`, `$[ ]`, `(( ))`, `for (( ))`, `let`.
  ['echo $(( {{secret:x}} ))', 'bash arithmetic'],
  ['echo "$(( {{secret:x}} + 1 ))"', 'bash arithmetic'],
  ['echo $(( "{{secret:x}}" ))', 'bash arithmetic'],
  ['echo $[ {{secret:x}} + 1 ]', 'bash arithmetic'],
  ['(( {{secret:x}} ))', 'bash arithmetic'],
  ['(( {{secret:x}} > 0 )) && echo big', 'bash arithmetic'],
  ['for ((i = 0; i < {{secret:x}}; i++)); do :; done', 'bash arithmetic'],
  ['let n={{secret:x}}', 'bash let'],
  ['let "n = {{secret:x}}"', 'bash let'],
  ['builtin let n={{secret:x}}', 'bash let'],
  ["'let' n={{secret:x}}", 'bash let'],
  ['\\let n={{secret:x}}', 'bash let'],
  ['case a in a) let n={{secret:x}};; esac', 'bash let'],
  // `[[ ]]`: arithmetic operands, `-v` names.
  ['[[ {{secret:x}} -eq 0 ]]', 'bash [[ ]]'],
  ['[[ "{{secret:x}}" == abc ]] && echo same', 'bash [[ ]]'],
  ['[[ -v {{secret:x}} ]]', 'bash [[ ]]'],
  // The value reaches arithmetic or a name through a variable, `$1`, a pipe: the whole command.
  ['v={{secret:x}}; echo $((v + 1))', 'bash arithmetic'],
  ['echo {{secret:x}}; echo $((n))', 'bash arithmetic'],
  ['f() { echo $(( $1 )); }; f {{secret:x}}', 'bash arithmetic'],
  ['echo {{secret:x}} | { read -r n; (( n > 0 )); }', 'bash arithmetic'],
  ['v={{secret:x}}; [[ $v -eq 1 ]]', 'bash [[ ]]'],
  ['v={{secret:x}}; echo ${!v}', 'bash ${!name}'],
  ['v={{secret:x}}; echo "${!v}"', 'bash ${!name}'],
  ['v={{secret:x}}; echo ${a[v]}', 'bash array subscript'],
  ['v={{secret:x}}; s=abcdef; echo ${s:v}', 'bash arithmetic'],
  ['v={{secret:x}}; echo ${v@P}', 'bash ${name@…}'],
  ['v={{secret:x}}; a[v]=1', 'bash array subscript'],
  ['v={{secret:x}}; b=([v]=1)', 'bash array subscript'],
  ['n={{secret:x}}; cat <<EOF\n$((n))\nEOF', 'bash arithmetic'],
  ['echo `echo $((n))` {{secret:x}}', 'bash arithmetic'],
  ['echo `echo \\`echo $((n))\\`` {{secret:x}}', 'bash arithmetic'],
  ['echo $(echo $((n))) {{secret:x}}', 'bash arithmetic'],
  // `declare` and its family: with -i/-n/-a/-A, a name, options, a computed name.
  ['declare -i n={{secret:x}}', 'bash declare -i'],
  ['v={{secret:x}}; declare -i n; n=$v', 'bash declare -i'],
  ['declare -n r={{secret:x}}; echo "$r"', 'bash declare -n'],
  ['declare -A m; m[k]={{secret:x}}', 'bash declare -A'],
  ['typeset -i n={{secret:x}}', 'bash typeset -i'],
  ['f() { local -a b={{secret:x}}; }; f', 'bash local -a'],
  ['command declare -i n={{secret:x}}', 'bash declare -i'],
  ['declare {{secret:x}}', 'bash declare'],
  ['declare {{secret:x}}=1', 'bash declare'],
  ['declare -r n={{secret:x}}', 'bash declare'],
  ['export {{secret:x}}', 'bash export'],
  ['readonly {{secret:x}}', 'bash readonly'],
  ['v={{secret:x}}; f() { local "$v"=1; }; f', 'bash local'],
  // Builtins that take variable names.
  ['unset {{secret:x}}', 'bash unset'],
  ['read -r {{secret:x}} < /dev/null', 'bash read'],
  ['mapfile -t {{secret:x}} < /dev/null', 'bash mapfile'],
  ['readarray {{secret:x}} < /dev/null', 'bash readarray'],
  ['getopts ab {{secret:x}}', 'bash getopts'],
  ['printf -v {{secret:x}} %s x', 'bash printf -v'],
  ['printf -v out %s {{secret:x}}', 'bash printf -v'],
  ['test -v {{secret:x}} || echo unset', 'bash test -v'],
  ['[ -v {{secret:x}} ]', 'bash [ -v'],
  ['sleep 0 & wait -p {{secret:x}}', 'bash wait -p'],
  ['v={{secret:x}}; unset "$v"', 'bash unset'],
  ['v={{secret:x}}; read -r "$v" < /dev/null', 'bash read'],
  // Special variables: assignment evaluates the value, or it is expanded later as a prompt.
  ['RANDOM={{secret:x}}', 'bash RANDOM'],
  ['OPTIND={{secret:x}}', 'bash OPTIND'],
  ['PS4={{secret:x}}; set -x; :', 'bash PS4'],
  ['export PS4={{secret:x}}', 'bash PS4'],
  ['for OPTIND in {{secret:x}}; do :; done', 'bash OPTIND'],
  ['echo {{secret:x}} | { read -r OPTIND; }', 'bash read'],
  // The value would choose the command, or a computed command may be any builtin.
  ['{{secret:x}} --version', 'bash command name'],
  // (`$CMD {{secret:x}}` is refused already: a computed name may be a shell, the token its script.)
  ['$CMD a {{secret:x}}', 'bash $CMD'],
  ['"$(command -v let)" n=1 {{secret:x}}', 'bash "$(command -v let)"'],
  // `coproc` runs the command after it (and `coproc NAME { …; }` its group).
  ['coproc read {{secret:x}}', 'bash read'],
  ['coproc N { read {{secret:x}}; }', 'bash read'],
  ['coproc let n={{secret:x}}', 'bash let'],
  // A nested shell's command string or `eval`'s script with an evaluating construct: the value may
  // reach it through the environment or a pipe.
  ["V={{secret:x}} bash -c 'echo $((V))'", 'bash -c: bash arithmetic'],
  ["echo {{secret:x}} | bash -c 'read v; echo $((v))'", 'bash -c: bash arithmetic'],
  ["echo {{secret:x}} | /bin/sh -ec 'read v; [[ $v -gt 1 ]]'", 'sh -c: bash [[ ]]'],
  ['export V={{secret:x}}; sudo -E zsh -c "let n=V"', 'zsh -c: bash let'],
  ['V={{secret:x}} bash -c \'bash -c "echo \\$((V))"\'', 'bash -c: bash -c: bash arithmetic'],
  ["v={{secret:x}}; eval 'echo $((v))'", 'eval: bash arithmetic'],
  // Command-wide, like any evaluating construct: also when the nested shell is another command.
  ["bash -c 'echo $((n))'; echo {{secret:x}}", 'bash -c: bash arithmetic'],
]

/** Placements that stay accepted: the value is an ordinary argument, a plain assignment or a `[ ]` operand. */
const ACCEPTED: readonly string[] = [
  'curl -H "Authorization: Bearer {{secret:x}}" https://example.com',
  'echo {{secret:x}} | base64',
  '[ "{{secret:x}}" = y ] || echo differs',
  '[ "{{secret:x}}" -eq 0 ] 2>/dev/null || echo not-zero',
  'test {{secret:x}} = y || echo differs',
  'export TOKEN={{secret:x}}',
  'v={{secret:x}}; printf %s "$v"',
  'declare n={{secret:x}}; printf %s "$n"',
  'f() { local n={{secret:x}}; printf %s "$n"; }; f',
  'TOKEN={{secret:x}} env | grep -c TOKEN',
  'echo $((60 * 60)) {{secret:x}}',
  'echo ${HOME} "${x:-default}" {{secret:x}}',
  's={{secret:x}}; echo "${s:0:4}"',
  'args=(-H "Authorization: Bearer {{secret:x}}"); printf "%s\\n" "${args[@]}" "${#args[@]}"',
  'printf "%s\\n" {{secret:x}} | while read -r line; do echo "$line"; done',
  'read -r line <<< "{{secret:x}}"; echo "$line"',
  'expr {{secret:x}} : ".*"',
  '"$HOME/bin/tool" push --token {{secret:x}}',
  "cat <<'EOF'\n$((n)) [[ ]]\nEOF\necho {{secret:x}}",
  "echo '$((n)) [[ x ]]' {{secret:x}}",
  'if [ -n "{{secret:x}}" ]; then echo set; fi',
  'printf "[%s]\\n" "{{secret:x}}" > out.txt; cat out.txt',
  // A nested shell whose script evaluates nothing (one that evaluates taints the whole command).
  "echo {{secret:x}} | sh -c 'cat'",
  'TOKEN={{secret:x}} bash -c \'curl -H "Authorization: Bearer $TOKEN" https://example.com\'',
  "bash -c 'echo hi'; echo {{secret:x}}",
]

/** File tokens become an inert path: fine in arithmetic and `[[ ]]`. */
const FILE_TOKENS_ACCEPTED: readonly string[] = [
  'echo $(( $(wc -c < {{secretfile:x}}) ))',
  '(( $(wc -c < {{secretfile:x}}) > 0 )) && echo non-empty',
  '[[ -s {{secretfile:x}} ]] && echo non-empty',
  'let n=$(wc -c < {{secretfile:x}})',
]

describe('a value token never reaches bash’s evaluation of names and arithmetic', () => {
  it.each(REFUSED)('refuses %s (by %s)', (command, by) => {
    const locations = locateRefTokens(command)
    expect(locations.length).toBeGreaterThan(0)
    for (const location of locations)
      expect(location).toMatchObject({ reparsedBy: by, evaluatedByBash: true })
    let error: unknown
    try {
      checkSecretPlacement(command)
    } catch (caught) {
      error = caught
    }
    expect(ExecError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'EXEC_SECRET_REPARSED', data: { token: '{{secret:x}}', by } })
    const message = (error as Error).message
    expect(message).toContain(by)
    expect(message).toContain('[ "$V" -eq 0 ]')
    expect(message).toContain("env: { V: '{{secret:x}}' }")
    expect(message).toContain('{{secretfile:x}}')
  })

  it.each(REFUSED)('refuses %s with {{decrypt:…}} too', (command, by) => {
    const decrypt = command.replaceAll('{{secret:x}}', '{{decrypt:id-1}}')
    expect(() => checkSecretPlacement(decrypt)).toThrow(
      expect.objectContaining({ data: expect.objectContaining({ by }) }),
    )
  })

  it.each(ACCEPTED)('accepts %s', (command) => {
    expect(() => checkSecretPlacement(command)).not.toThrow()
    for (const location of locateRefTokens(command)) expect(location.reparsedBy).toBeUndefined()
  })

  it.each(FILE_TOKENS_ACCEPTED)('accepts the file token in %s', (command) => {
    expect(() => checkSecretPlacement(command)).not.toThrow()
  })

  it('keeps the nested parser’s name where a token is both reparsed and in an evaluating command', () => {
    const [location] = locateRefTokens('eval "echo {{secret:x}}"; echo $((n))')
    expect(location).toMatchObject({ reparsedBy: 'eval' })
    expect(location?.evaluatedByBash).toBeUndefined()
  })

  it('reads a long command full of evaluating constructs', () => {
    // Its speed is the bench's business (a timed assertion fails on a loaded machine).
    const command = `${'echo $((a[i] + 1)); [[ -v x ]]; let y=1; '.repeat(2000)}echo {{secret:x}}`
    expect(locateRefTokens(command)[0]?.reparsedBy).toBe('bash arithmetic')
  })
})

const BASH = '/bin/bash'

describe.skipIf(!existsSync(BASH))('under /bin/bash, end to end', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let marker: string
  let value: string
  let refStore: MemoryRefStore
  beforeEach(async () => {
    dir = await tempDir()
    marker = join(dir.path, 'injected')
    // A value that is code wherever bash evaluates a name: the subscript's `$(…)` runs.
    value = `a[$(touch ${marker})]`
    refStore = new MemoryRefStore({ '{{secret:x}}': value })
  })
  afterEach(async () => {
    await dir.cleanup()
  })

  it('control: bash runs the value’s code in $(( "$V" )), as an expansion in double quotes', async () => {
    const result = spawnSync(BASH, ['-c', 'echo $(( "$V" ))'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', V: value },
      encoding: 'utf8',
    })
    expect(result.error).toBeUndefined()
    expect(existsSync(marker)).toBe(true)
  })

  it('refuses $(( {{secret:x}} )) before spawning, and nothing runs', async () => {
    for (const command of [
      'echo $(( {{secret:x}} ))',
      'v={{secret:x}}; echo $((v + 1))',
      '[[ {{secret:x}} -eq 0 ]]',
    ]) {
      const error = await run(command, { refStore, shell: BASH, cwd: dir.path }).catch(
        (caught: unknown) => caught,
      )
      expect(ExecError.is(error), command).toBe(true)
      expect(error).toMatchObject({ code: 'EXEC_SECRET_REPARSED', data: { token: '{{secret:x}}' } })
      expect((error as Error).message).not.toContain(value)
    }
    await expect(readFile(marker)).rejects.toThrow()
  })

  it.each([
    'echo {{secret:x}} | base64',
    '[ "{{secret:x}}" = y ] || echo differs',
    '[ "{{secret:x}}" -eq 0 ] 2>/dev/null || echo not-zero',
    'export TOKEN={{secret:x}}; printf %s "$TOKEN" | wc -c',
    'v={{secret:x}}; printf %s "$v"',
    'read -r line <<< "{{secret:x}}"; printf %s "$line"',
    'echo $((60 * 60)) {{secret:x}}',
  ])('runs %s with the value as data', async (command) => {
    const result = await run(command, { refStore, shell: BASH, cwd: dir.path })
    expect(result.exitCode).toBe(0)
    await expect(readFile(marker)).rejects.toThrow()
  })

  it('a file token in arithmetic stays an inert path', async () => {
    const result = await run('echo $(( $(wc -c < {{secretfile:x}}) ))', {
      refStore,
      shell: BASH,
      cwd: dir.path,
    })
    expect(result.stdout.trim()).toBe(String(Buffer.byteLength(value)))
    await expect(readFile(marker)).rejects.toThrow()
  })
})
