import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  EMPTY_SPLITS,
  OUT_OF_REACH,
  SPLIT_EVASIONS,
  WORD_SHAPE_EVASIONS,
} from '../../test/fixtures/guard-corpus.js'
import { classifyLangoExec } from './index.js'

/**
 * Cross-checks the corpus against bash and the real tools (issue 11, findings 3 and 4): a fake `lango`
 * on PATH records every run, so a blocked case must really run lango and an allowed one must not.
 * Only commands safe to execute in a temporary directory are run; a case whose tool is missing here
 * is skipped.
 */

const hasBash = existsSync('/bin/bash') || existsSync('/usr/bin/bash')

function installed(program: string): boolean {
  if (/^(?:true|eval|exec|command|builtin|time|cd|export|shopt|for|if|while|\(|\{|read)$/.test(program))
    return true
  return (process.env.PATH ?? '/usr/bin:/bin')
    .split(delimiter)
    .concat(['/usr/sbin', '/sbin'])
    .some((directory) => directory !== '' && existsSync(join(directory, program)))
}

/** The first program of a simple command line (`env`, `timeout`, …), to skip cases whose tool is missing. */
function firstProgram(command: string): string {
  return (/^\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*([^\s;|&]+)/.exec(command)?.[1] ?? '').replace(/^.*\//, '')
}

/** Runner evasions that work without privileges wherever their tool is installed. */
const RUNNERS_THAT_RUN: readonly string[] = [
  'setpriv --nnp lango cron',
  'setpriv --no-new-privs --inh-caps=-all lango cron',
  'prlimit --nofile=1024 lango cron',
  'prlimit -n1024 lango cron',
  'prlimit --cpu=10 -- lango cron',
  'prlimit --output RESOURCE lango cron',
  'nice -n19 lango cron',
  'nice --adjustment 5 lango cron',
  'nice --adj=5 lango cron',
  'nice -5 lango cron',
  'nice --10 lango cron',
  'timeout --sig HUP 5 lango cron',
  'timeout --k 2 5 lango cron',
  'timeout -vk 1 5 lango cron',
  'timeout -sKILL 5 lango cron',
  'timeout -- 5 lango cron',
  'stdbuf --output L lango cron',
  'stdbuf -eL -- lango cron',
  'setsid -w lango cron',
  'taskset -c 0 lango cron',
  'taskset 0x1 lango cron',
  'ionice -c 3 lango cron',
  'ionice -c3 lango cron',
  'ionice -t -c 3 lango cron',
  'chrt -o 0 lango cron',
  'chrt -b 0 lango cron',
  'chrt -i 0 lango cron',
  'choom -n 1000 lango cron',
  'choom -n 1000 -- lango cron',
  'setarch -R lango cron',
  "capsh -- -c 'lango cron'",
  "capsh == -- -c 'lango cron'",
  'fakeroot lango cron',
  'fakeroot -- lango cron',
  'fakeroot -u lango cron',
  'flock -x lock lango cron',
  'flock --timeout 10 lock lango cron',
  "flock -s lock -c 'lango cron'",
  "flock lock --command 'lango cron'",
  "script -q -c 'lango cron' -E never /dev/null",
  "script --quiet --command 'lango cron' /dev/null",
  "script /dev/null -c 'lango cron'",
  'env -i PATH="$PATH" lango cron',
  "env -S'-i PATH=bin lango cron'",
  'env --chdir . lango cron',
  'env --uns A lango cron',
  'env a-b=1 lango cron',
  'env /x=1 lango cron',
  "env 'A B=1' lango cron",
  'env -v lango cron',
  'xargs -e lango cron < ids',
  'xargs -l lango cron < ids',
  'xargs -d , lango cron < ids',
  'xargs -i lango cron {} < ids',
  'xargs --replace=% lango cron % < ids',
  'find . -maxdepth 0 -exec lango cron {} +',
  'find . -maxdepth 0 -execdir lango cron \\;',
  'awk \'BEGIN{system("lango cron")}\'',
  'awk \'BEGIN { "lango cron" | getline x }\'',
  'awk \'BEGIN{system("lan" "go cron")}\'',
  'awk \'BEGIN{system("\\154ango cron")}\'',
  'awk \'BEGIN{cmd="lango cron"; system(cmd)}\'',
  "awk -v c='lango cron' 'BEGIN{system(c)}'",
  "awk '{system($0)}' <<< 'lango cron'",
  'mawk \'BEGIN{while(("lango cron" | getline l) > 0) print l}\'',
  "sed '1e lango cron' ids",
  "echo x | sed 's/.*/lango cron/e'",
  'echo lango cron | sed e',
  "sed --expression='e lango cron' ids",
  "git -c alias.x='!lango cron' x",
  "tar --to-command='lango cron' -xf archive.tar",
  'tar -I lango -cf out.tar ids',
  "ssh -o ProxyCommand='lango cron' -o BatchMode=yes h",
  "rsync -e 'lango cron' ids h:b",
  "socat - EXEC:'lango cron'",
  "socat - SYSTEM:'lango cron',pty",
  "gdb -batch -ex 'shell lango cron'",
]

/** Benign commands that are safe to run: bash must not run lango for any of them. */
const BENIGN_THAT_RUN: readonly string[] = [
  "awk '/lango/ {print}' app.log",
  'awk \'$1=="lango"{print $2}\' app.log',
  "awk '/lango|error/' app.log",
  'awk \'/lango/ { print | "sort -u" }\' app.log',
  "awk '{ if ($0 ~ /lango cron/) n++ } END { print n }' app.log",
  "sed -n '/lango/p' app.log",
  "sed 's/lango/LANGO/g' app.log",
  "sed --sandbox 'e lango cron' app.log",
  'echo lan$()go',
  'echo "lan${x}go cron"',
  'cat lan$()go.yaml',
  'mylan$()go cron',
  'lan$()go-helper cron',
  'lan$((0))go cron',
  'lan${#}go cron',
  'lan$?go cron',
  'lan$$go cron',
  'lan${#x}go cron',
  'lan${#x[@]}go cron',
  'lan${x:-foo}go cron',
  'lan${x:?}go cron',
  'lan$x go cron',
  'l$()ango-helper',
  'sh -c \'exec "$@"\' sh ls lango',
  'sh -c \'"$@"\' _ ls lango',
  'x=ls; $x lango.yaml',
  'ls lan*go.yaml',
  'echo {lan,go}',
  'timeout --kill-after=1 5 ls lango',
  'env -u HOME ls lango',
  "env -S 'ls -la'",
  'xargs -n1 echo lango < ids',
  "setpriv --nnp sh -c 'echo lango'",
  "flock -n lock -c 'cat lango.yaml'",
  'git -c core.pager=cat log -1',
  'cpulimit -e lango -l 50',
  'f() { echo hi; }; f lango',
  'g() { ls "$1"; }; g lango',
  "alias ll='ls -la'; ll lango",
  'set -- a b; echo "$1" lango',
]

describe.skipIf(!hasBash)('bash oracle for the corpus', () => {
  let root = ''
  let marker = ''
  let bin = ''

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'lango-corpus-'))
    bin = join(root, 'bin')
    mkdirSync(bin)
    marker = join(root, 'ran')
    const fake = `#!/bin/sh\necho "$*" >> "${marker}"\n`
    // The guard matches lango in any case and with a Windows suffix; give bash something to find.
    for (const name of ['lango', 'LANGO', 'LaNgO', 'lango.exe']) {
      for (const directory of [bin, root]) {
        writeFileSync(join(directory, name), fake)
        chmodSync(join(directory, name), 0o755)
      }
    }
    writeFileSync(join(root, 'lango.yaml'), 'x: 1\n')
    writeFileSync(join(root, 'ids'), 'a\n')
    writeFileSync(join(root, 'name.txt'), 'lango\n')
    writeFileSync(join(root, 'app.log'), 'lango cron list\nerror x\nlango serve\n')
    writeFileSync(join(root, 'lock'), '')
    spawnSync('tar', ['-cf', 'archive.tar', 'ids'], { cwd: root })
  })

  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  const run = (command: string): boolean => {
    rmSync(marker, { force: true })
    spawnSync('bash', ['-c', command], {
      cwd: root,
      env: { PATH: `${bin}:/usr/bin:/bin:/usr/sbin:/sbin`, HOME: root, LANG: 'C' },
      input: '',
      timeout: 15_000,
      stdio: ['pipe', 'ignore', 'ignore'],
    })
    return existsSync(marker) && readFileSync(marker, 'utf8').length > 0
  }

  /**
   * Spellings bash cannot run here although they can be empty: a path prefix outside the temporary
   * directory; `${!x}` with `x` unset is an error (set `x` to the name of an unset variable and it is
   * empty); `$_` starts as the shell's path (after `echo ''` it is empty).
   */
  const notRunnable = (command: string): boolean => /\/usr\/bin|\$\{dir\}|\$\{!x\}|\$\{_\}/.test(command)
  /** bash expansions dash rejects (`Bad substitution`): skip them in `sh -c` where sh is dash. */
  const bashOnly = (command: string): boolean =>
    command.startsWith('sh -c') && /\$\{[^}]*(?:[/^,@[]|:[0-9])/.test(command)

  const runnable = EMPTY_SPLITS.filter((word) => !notRunnable(word))

  it.each(runnable)('finding 3: bash runs lango for `%s cron`, and the guard blocks it', (word) => {
    const command = `${word} cron`
    expect(classifyLangoExec(command)).toMatchObject({ verdict: 'block', phase: 1, subcommand: 'cron' })
    expect(run(command)).toBe(true)
  })

  // Every split behind every runner is in the table test; bash checks a sample of them (every fifth).
  const wrapped = SPLIT_EVASIONS.filter(
    ([command], index) =>
      index % 5 === 0 && !notRunnable(command) && !bashOnly(command) && installed(firstProgram(command)),
  )

  it.each(wrapped.map(([command]) => command))(
    'finding 3 behind runners: bash runs lango for %s',
    (command) => {
      expect(classifyLangoExec(command).verdict).toBe('block')
      expect(run(command)).toBe(true)
    },
  )

  /** Blocked on purpose although bash does not run lango: a parse error, and flow the guard does not follow. */
  const OVER_APPROXIMATE = new Set(['echo "unterminated; lan$()go cron', 'x=foo; lan${x}go cron'])

  it.each(
    WORD_SHAPE_EVASIONS.map(([command]) => command).filter(
      (command) => !OVER_APPROXIMATE.has(command) && installed(firstProgram(command)),
    ),
  )('finding 3 shapes: bash runs lango for %s', (command) => {
    expect(classifyLangoExec(command).verdict).toBe('block')
    expect(run(command)).toBe(true)
  })

  it.each(RUNNERS_THAT_RUN.filter((command) => installed(firstProgram(command))))(
    'finding 4: the real tool runs lango for %s, and the guard blocks it',
    (command) => {
      expect(classifyLangoExec(command).verdict).toBe('block')
      expect(run(command)).toBe(true)
    },
  )

  it.each(BENIGN_THAT_RUN.filter((command) => installed(firstProgram(command))))(
    'benign: bash does not run lango for %s, and the guard allows it',
    (command) => {
      expect(classifyLangoExec(command)).toEqual({ verdict: 'allow' })
      expect(run(command)).toBe(false)
    },
  )

  it.each(OUT_OF_REACH.filter((command) => installed(firstProgram(command))))(
    'documented limit: bash runs lango for %s, which the static guard cannot see',
    (command) => {
      expect(run(command)).toBe(true)
      expect(classifyLangoExec(command)).toEqual({ verdict: 'allow' })
    },
  )
})
