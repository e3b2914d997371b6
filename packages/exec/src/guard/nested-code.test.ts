import { describe, expect, it } from 'vitest'
import { locateRefTokens } from './index.js'

const reparsedBy = (command: string): (string | undefined)[] =>
  locateRefTokens(command).map((location) => location.reparsedBy)

/** A token in text a second parser reads as code, and the program named for it. */
const REPARSED: readonly (readonly [command: string, by: string])[] = [
  // Short-option clusters of programs that run `-c COMMAND` through a shell.
  ['script -qc "echo {{secret:x}}" /dev/null', 'script'],
  ['script -q -c "echo {{secret:x}}" /dev/null', 'script'],
  ['script -c"echo {{secret:x}}" /dev/null', 'script'],
  ['script --comm "echo {{secret:x}}" /dev/null', 'script'],
  ['su -lc "echo {{secret:x}}"', 'su'],
  ['su -c"echo {{secret:x}}"', 'su'],
  ['su -lc"echo {{secret:x}}" nobody', 'su'],
  ['su -c "echo {{secret:x}}" nobody', 'su'],
  ['su nobody -mc "echo {{secret:x}}"', 'su'],
  ['su --session-command="echo {{secret:x}}" nobody', 'su'],
  ['su -s /bin/sh -lc "echo {{secret:x}}" nobody', 'su'],
  ['sudo su -lc "echo {{secret:x}}"', 'su'],
  ['runuser -lc "echo {{secret:x}}" nobody', 'runuser'],
  ['runuser -l nobody -c"echo {{secret:x}}"', 'runuser'],
  // A code letter after an option that takes an argument: unsure, so both the rest and the next word.
  ['script -tc "echo {{secret:x}}" /dev/null', 'script'],
  ['su -sc "echo {{secret:x}}"', 'su'],
  // Inline programs behind clusters.
  ['python3 -Sc "print(\'{{secret:x}}\')"', 'python3'],
  ['python3 -IBc "print(\'{{secret:x}}\')"', 'python3'],
  ['python3 -c"print(\'{{secret:x}}\')"', 'python3'],
  ['python3 -Sc"print(\'{{secret:x}}\')"', 'python3'],
  ['python3 -SW ignore -c "print(\'{{secret:x}}\')"', 'python3'],
  ['perl -we "print q({{secret:x}})"', 'perl'],
  ['perl -lne "print q({{secret:x}})"', 'perl'],
  ['perl -l0777 -we "print q({{secret:x}})"', 'perl'],
  ['perl -wE "say q({{secret:x}})"', 'perl'],
  ['perl -pie "s/a/{{secret:x}}/" file', 'perl'],
  ['ruby -we "puts %q({{secret:x}})"', 'ruby'],
  ['node -pe "\'{{secret:x}}\'"', 'node'],
  ['node -p -e "\'{{secret:x}}\'"', 'node'],
  ['node --print -e "\'{{secret:x}}\'"', 'node'],
  ['node -p "\'{{secret:x}}\'"', 'node'],
  ['node --eval="console.log(\'{{secret:x}}\')"', 'node'],
  ['bun -pe "\'{{secret:x}}\'"', 'bun'],
  ['php -nr "echo \'{{secret:x}}\';"', 'php'],
  ['php -R "echo \'{{secret:x}}\';"', 'php'],
  ['julia -qe "println(\\"{{secret:x}}\\")"', 'julia'],
  ['pwsh -NoProfile -Comm "Write-Output \'{{secret:x}}\'"', 'pwsh'],
  ['pwsh -c Write-Output {{secret:x}}', 'pwsh'],
  ['pwsh -ExecutionPolicy Bypass -Command "Write-Output \'{{secret:x}}\'"', 'pwsh'],
  ['node --require ./setup.js -e "console.log(\'{{secret:x}}\')"', 'node'],
  // A shell's command string is the first operand after its options.
  ['bash -eo pipefail -c "echo {{secret:x}}"', 'bash'],
  ['bash -c -o pipefail "echo {{secret:x}}"', 'bash'],
  ['bash -oc pipefail "echo {{secret:x}}"', 'bash'],
  ['bash -c -- "echo {{secret:x}}"', 'bash'],
  // Here-document bodies of commands piped into a shell.
  ['cat <<EOF | sh\necho {{secret:x}}\nEOF', 'sh'],
  ['cat <<-EOF | tee /dev/null | bash\n\techo {{secret:x}}\n\tEOF', 'bash'],
  ['{ cat <<EOF; } | sh\necho {{secret:x}}\nEOF', 'sh'],
  ['(cat <<EOF\necho {{secret:x}}\nEOF\n) | sh', 'sh'],
  ['cat <<EOF | python3\nprint("{{secret:x}}")\nEOF', 'python3'],
  // A shell anywhere in a subshell or group that reads the pipe.
  ["printf 'echo %s\\n' {{secret:x}} | (cat | sh)", 'sh'],
  ['echo "echo {{secret:x}}" | { tee /dev/null | bash; }', 'bash'],
  ['echo "echo {{secret:x}}" | (grep echo | tr a a | sh)', 'sh'],
  ['echo "echo {{secret:x}}" | (sh)', 'sh'],
  // trap's action runs as code.
  ['trap "echo {{secret:x}}" EXIT', 'trap'],
  ['trap -- "echo {{secret:x}}" INT TERM', 'trap'],
  ['builtin trap "echo {{secret:x}}" EXIT', 'trap'],
]

/** The value stays data: an argument, a file name, or input nobody parses as code. */
const DATA: readonly string[] = [
  'curl -H "Auth: {{secret:x}}" https://example.com',
  'grep -c {{secret:x}} file.txt',
  'grep -c pattern {{secret:x}}',
  'script -qc "true" {{secret:x}}',
  'script -q -c "true" {{secret:x}}',
  "su -lc 'id' {{secret:x}}",
  "su -s /bin/sh -c 'id' {{secret:x}}",
  'python3 -Wonce script.py {{secret:x}}',
  'python3 -SW ignore script.py {{secret:x}}',
  'python3 script.py -c {{secret:x}}',
  'python3 -Sc "import sys; print(sys.argv[1])" {{secret:x}}',
  'python3 -c"import sys; print(sys.argv[1])" {{secret:x}}',
  'perl -lne "print" {{secret:x}}',
  'perl -we "print $ARGV[0]" {{secret:x}}',
  'node -pe "process.argv[1]" {{secret:x}}',
  'node -e "console.log(process.argv[1])" {{secret:x}}',
  'node --require ./setup.js app.js -e {{secret:x}}',
  'echo {{secret:x}} | node --no-warnings app.js',
  'pwsh -NoProfile -File ./script.ps1 {{secret:x}}',
  'bash -o pipefail -c \'printf "%s\\n" "$1"\' bash {{secret:x}}',
  'bash -eo pipefail -c \'printf "%s\\n" "$1"\' bash {{secret:x}}',
  'cat <<EOF | wc -c\n{{secret:x}}\nEOF',
  'echo {{secret:x}} | (cat; echo done)',
  'printf %s {{secret:x}} | { wc -c; }',
  "trap 'echo done' EXIT; printf %s {{secret:x}} | wc -c",
  'find . -exec echo {} {{secret:x}} \\;',
]

describe('code parsed again: option clusters, here-documents in pipelines, subshells, trap', () => {
  it.each(REPARSED)('%j is parsed again by %s', (command, by) => {
    expect(reparsedBy(command)).toEqual([by])
  })

  it.each(DATA)('%j keeps the value as data', (command) => {
    expect(reparsedBy(command)).toEqual([undefined])
  })
})
