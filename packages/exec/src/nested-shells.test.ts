import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { tempDir } from './__fixtures__/helpers.js'
import { ExecError, locateRefTokens, MemoryRefStore, ProcessRegistry, run } from './index.js'
import { nodePtyDriver, runWithPty } from './pty/index.js'

let dir: { path: string; cleanup: () => Promise<void> }
let marker: string
let refStore: MemoryRefStore
beforeEach(async () => {
  dir = await tempDir()
  marker = join(dir.path, 'injected')
  // A value that is shell code: if any shell parses it, the marker file appears.
  refStore = new MemoryRefStore({ '{{secret:x}}': `v1$(touch ${marker})\`touch ${marker}\`;touch ${marker}` })
})
afterEach(async () => {
  await dir.cleanup()
})

/** Commands in which a nested shell, `eval` or an interpreter would parse the token's value as code. */
const REPARSED: ReadonlyArray<readonly [string, string]> = [
  ['sh -c "echo {{secret:x}}"', 'sh'],
  ["bash -lc 'echo {{secret:x}}'", 'bash'],
  ['bash -o pipefail -c "echo {{secret:x}} | cat"', 'bash'],
  ['timeout 5 sh -c "echo {{secret:x}}"', 'sh'],
  ['env FOO=1 nice -n 5 /bin/dash -c "echo {{secret:x}}"', 'dash'],
  ['sh -c "$(echo {{secret:x}})"', 'sh'],
  ['eval "echo {{secret:x}}"', 'eval'],
  ['eval echo {{secret:x}}', 'eval'],
  ['echo {{secret:x}} | sh', 'sh'],
  ['printf "%s\\n" "echo {{secret:x}}" | tee /dev/null | bash -s', 'bash'],
  ['sh <<EOF\necho {{secret:x}}\nEOF', 'sh'],
  ['bash <<< "echo {{secret:x}}"', 'bash'],
  ['. <(echo "echo {{secret:x}}")', '.'],
  ['source /dev/stdin <<< "echo {{secret:x}}"', 'source'],
  ['sh < <(echo "echo {{secret:x}}")', 'sh'],
  ['bash 0< <(printf "%s\\n" "echo {{secret:x}}")', 'bash'],
  ['python3 < <(echo "print(\'{{secret:x}}\')")', 'python3'],
  // A script operand that is the command's own input: a shell or interpreter reads it as code.
  ['echo "echo {{secret:x}}" | sh /dev/stdin', 'sh'],
  ['sh /dev/stdin <<EOF\necho {{secret:x}}\nEOF', 'sh'],
  ['bash --norc /dev/fd/0 <<< "echo {{secret:x}}"', 'bash'],
  ['sh //dev/./stdin <<< "echo {{secret:x}}"', 'sh'],
  ['bash /proc/self/fd/0 <<< "echo {{secret:x}}"', 'bash'],
  ['sh /dev/fd/3 3<<< "echo {{secret:x}}"', 'sh'],
  ['sh - <<< "echo {{secret:x}}"', 'sh'],
  ['sh ../../../../../../dev/stdin <<< "echo {{secret:x}}"', 'sh'],
  ['sh /proc/self/root/dev/stdin <<< "echo {{secret:x}}"', 'sh'],
  ['python3 ../../../../../../dev/stdin <<< "print(\'{{secret:x}}\')"', 'python3'],
  ['echo "print(\'{{secret:x}}\')" | python3 /dev/stdin', 'python3'],
  ['echo {{secret:x}} | xargs -I{} sh -c "echo {}"', 'sh'],
  ['find . -maxdepth 0 -exec sh -c "echo {{secret:x}}" \\;', 'sh'],
  ['su -c "echo {{secret:x}}" nobody', 'su'],
  ['ssh host "echo {{secret:x}}"', 'ssh'],
  ['watch -n 1 "echo {{secret:x}}"', 'watch'],
  ['"$SHELL" -c "echo {{secret:x}}"', '$SHELL'],
  ['env -S "echo {{secret:x}}"', 'env -S'],
  ['python3 -c "print(\'{{secret:x}}\')"', 'python3'],
  ['python3.12 -W ignore -c "print(\'{{secret:x}}\')"', 'python3.12'],
  ['node -e "console.log(\'{{secret:x}}\')"', 'node'],
  ['perl -e "print q({{secret:x}})"', 'perl'],
  ['ruby -e "puts %q({{secret:x}})"', 'ruby'],
  ['echo "print(\'{{secret:x}}\')" | python3', 'python3'],
  ['awk "BEGIN { print \\"{{secret:x}}\\" }"', 'awk'],
  ['sed "s/a/{{secret:x}}/" /dev/null', 'sed'],
  // Short-option clusters, here-documents piped into a shell, a shell inside a subshell, trap.
  ['script -qc "echo {{secret:x}}" /dev/null', 'script'],
  ['su -lc "echo {{secret:x}}"', 'su'],
  ['su -c"echo {{secret:x}}"', 'su'],
  ['runuser -lc "echo {{secret:x}}" nobody', 'runuser'],
  ['python3 -Sc "print(\'{{secret:x}}\')"', 'python3'],
  ['perl -we "print q({{secret:x}})"', 'perl'],
  ['node -pe "\'{{secret:x}}\'"', 'node'],
  ['bash -eo pipefail -c "echo {{secret:x}}"', 'bash'],
  ['cat <<EOF | sh\necho {{secret:x}}\nEOF', 'sh'],
  ["printf 'echo %s\\n' {{secret:x}} | (cat | sh)", 'sh'],
  ['trap "echo {{secret:x}}" EXIT', 'trap'],
]

/** Commands where the value stays data: a nested program receives it as an argument or on stdin. */
const DATA: readonly string[] = [
  'sh -c \'printf "%s\\n" "$1"\' sh {{secret:x}}',
  'bash -c \'printf "%s\\n" "$0"\' {{secret:x}}',
  'echo {{secret:x}} | wc -c',
  'printf %s {{secret:x}} | base64 | cat',
  'awk -v k={{secret:x}} "BEGIN { print length(k) }"',
  'find . -maxdepth 0 -name "x" -o -print | grep -c {{secret:x}} || true',
  'printf "%s" "{{secret:x}}" > value.txt; cat value.txt',
  // A script file given stdin: the value is the script's data.
  `echo 'read v; echo "$v" | wc -c' > read.sh; printf "%s\\n" {{secret:x}} | sh read.sh`,
  // An inline program behind a cluster, given the value as an argument.
  'node -pe "process.argv[1].length" {{secret:x}}',
  'bash -eo pipefail -c \'printf "%s" "$1" | wc -c\' bash {{secret:x}}',
  'cat <<EOF | wc -c\n{{secret:x}}\nEOF',
  "trap 'echo done' EXIT; printf %s {{secret:x}} | (cat | wc -c)",
]

describe('a secret value is never parsed again as code (issue 11, finding 7)', () => {
  it.each(REPARSED)('refuses %s (parsed again by %s) before spawning', async (command, by) => {
    const error = await run(command, { refStore, cwd: dir.path }).catch((caught: unknown) => caught)
    expect(ExecError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'EXEC_SECRET_REPARSED', data: { token: '{{secret:x}}', by } })
    expect((error as Error).message).toContain('{{secret:x}}')
    expect((error as Error).message).toMatch(/environment variable|secretfile/)
    await expect(readFile(marker)).rejects.toThrow()
    expect(locateRefTokens(command)[0]?.reparsedBy).toBe(by)
  })

  it.each(DATA)('passes %s as data, and the value never runs', async (command) => {
    const result = await run(command, { refStore, cwd: dir.path })
    expect(result.exitCode).toBe(0)
    await expect(readFile(marker)).rejects.toThrow()
    expect(locateRefTokens(command)[0]?.reparsedBy).toBeUndefined()
  })

  it('applies to every spawner', async () => {
    const command = 'sh -c "echo {{secret:x}}"'
    await expect(runWithPty(command, { refStore })).rejects.toMatchObject({ code: 'EXEC_SECRET_REPARSED' })
    await using registry = new ProcessRegistry({ refStore, ptyDriver: nodePtyDriver() })
    for (const pty of [false, true])
      await expect(registry.start(command, { pty })).rejects.toMatchObject({ code: 'EXEC_SECRET_REPARSED' })
    await expect(readFile(marker)).rejects.toThrow()
  })

  it('leaves unknown tokens alone: nothing is resolved, nothing refused', async () => {
    const result = await run("sh -c 'echo {{secret:unknown}}'", { refStore })
    expect(result.stdout).toBe('{{secret:unknown}}\n')
  })

  it("with unknownReferences: 'refuse', a token the store does not hold fails before spawning (a misspelt name)", async () => {
    for (const [command, env] of [
      [`echo {{secret:GITHUB_TOKN}} > ${marker}`, undefined],
      [`printf %s "$X" > ${marker}`, { X: 'Bearer {{secret:GITHUB_TOKN}}' }],
    ] as const) {
      const error = await run(command, {
        refStore,
        unknownReferences: 'refuse',
        cwd: dir.path,
        ...(env === undefined ? {} : { env }),
      }).catch((caught: unknown) => caught)
      expect(error).toMatchObject({
        code: 'EXEC_SECRET_UNKNOWN',
        data: { token: '{{secret:GITHUB_TOKN}}', name: 'GITHUB_TOKN' },
      })
      expect((error as Error).message).toContain('names nothing the secret store holds')
      await expect(readFile(marker)).rejects.toThrow()
    }
    // Known tokens, and tokens in comments, still run.
    const result = await run('echo {{secret:x}} | wc -c # not {{secret:nope}}', {
      refStore,
      unknownReferences: 'refuse',
    })
    expect(result.exitCode).toBe(0)
    await using registry = new ProcessRegistry({ refStore, unknownReferences: 'refuse' })
    await expect(registry.start('echo {{secret:nope}}')).rejects.toMatchObject({
      code: 'EXEC_SECRET_UNKNOWN',
    })
  })
})
