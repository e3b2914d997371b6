import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { shellQuote } from '../../test/fixtures/guard-corpus.js'
import {
  type AutomationAvailability,
  blockLangoExec,
  classifyLangoExec,
  LANGO_SUBCOMMAND_GUIDANCE,
  type LangoBlockReason,
  langoExecMessage,
  MAX_GUARD_INPUT_LENGTH,
} from './index.js'

/** `[command, phase, subcommand]`: the expected block verdict (subcommand only for phase 1). */
type BlockCase = readonly [command: string, phase: 1 | 2, subcommand?: string]

const SEED_SCENARIOS: readonly BlockCase[] = [
  ['lango cron list', 1, 'cron'],
  ['lango cron add --name daily --schedule "0 9 * * *"', 1, 'cron'],
  ['lango bg list', 1, 'bg'],
  ['lango background submit "summarise"', 1, 'background'],
  ['lango workflow run flow.yaml', 1, 'workflow'],
  ['lango graph query "x"', 1, 'graph'],
  ['lango memory list', 1, 'memory'],
  ['lango p2p status', 1, 'p2p'],
  ['lango security db-migrate', 1, 'security'],
  ['LANGO SECURITY DB-MIGRATE', 1, 'security'],
  ['Lango Payment send 5', 1, 'payment'],
  ['lango config get agent.model', 1, 'config'],
  ['lango doctor', 1, 'doctor'],
  ['lango settings', 1, 'settings'],
  ['lango serve', 1, 'serve'],
  ['lango onboard', 1, 'onboard'],
  ['lango agent list', 1, 'agent'],
  ['lango', 2],
  ['LANGO', 2],
  ['lango --help', 2],
  ['lango version', 2],
  ['lango mcp list', 2],
  ['lango cronjob list', 2],
  ['lango --config x cron list', 1, 'cron'],
  ['lango --config=x.json bg list', 1, 'bg'],
  ['lango -v workflow list', 1, 'workflow'],
  ['lango -- cron list', 1, 'cron'],
  ['   lango cron list   ', 1, 'cron'],
  ['lango\tcron\tlist', 1, 'cron'],
]

const LISTS_AND_COMPOUNDS: readonly BlockCase[] = [
  ['cd /tmp && lango cron list', 1, 'cron'],
  ['true; lango memory', 1, 'memory'],
  ['false || lango memory', 1, 'memory'],
  ['true || lango memory', 1, 'memory'],
  ['sleep 1 & lango bg list', 1, 'bg'],
  ['echo a;lango cron', 1, 'cron'],
  ['echo a&&lango cron', 1, 'cron'],
  ['echo x | lango workflow run', 1, 'workflow'],
  ['echo a|lango cron', 1, 'cron'],
  ['lango p2p status | grep peer', 1, 'p2p'],
  ['lango cron list |& tee out', 1, 'cron'],
  ['! lango doctor', 1, 'doctor'],
  ['(lango config)', 1, 'config'],
  ['( cd x; lango config )', 1, 'config'],
  ['{ lango cron list; }', 1, 'cron'],
  ['if lango doctor; then echo ok; fi', 1, 'doctor'],
  ['if true; then lango doctor; fi', 1, 'doctor'],
  ['if false; then :; else lango doctor; fi', 1, 'doctor'],
  ['if false; then :; elif lango doctor; then :; fi', 1, 'doctor'],
  ['while lango cron list; do sleep 1; done', 1, 'cron'],
  ['until false; do lango cron list; done', 1, 'cron'],
  ['for i in 1 2; do lango cron list; done', 1, 'cron'],
  ['for ((i=0;i<2;i++)); do lango cron list; done', 1, 'cron'],
  ['select x in a; do lango cron; done', 1, 'cron'],
  ['case x in x) lango cron list;; esac', 1, 'cron'],
  ['f() { lango cron list; }; f', 1, 'cron'],
  ['function g { lango memory; }', 1, 'memory'],
  ['coproc lango serve', 1, 'serve'],
  ['echo $(lango memory list)', 1, 'memory'],
  ['echo `lango memory list`', 1, 'memory'],
  ['echo "$(lango memory list)"', 1, 'memory'],
  ['echo "`lango memory list`"', 1, 'memory'],
  ['echo "a $(echo "b $(lango graph)")"', 1, 'graph'],
  ['diff <(lango config show) expected.txt', 1, 'config'],
  ['tee >(lango cron add) < input', 1, 'cron'],
  ['x=$(lango config get)', 1, 'config'],
  ['echo ${x:-$(lango doctor)}', 1, 'doctor'],
  ['[[ $(lango doctor) ]]', 1, 'doctor'],
  ['(( $(lango doctor) ))', 1, 'doctor'],
  ['((lango doctor))', 1, 'doctor'],
  ['echo hi > $(lango doctor)', 1, 'doctor'],
  ['cat <<EOF\n$(lango doctor)\nEOF', 1, 'doctor'],
  ['FOO=bar lango cron list', 1, 'cron'],
  ['FOO=bar BAZ="a b" lango cron list', 1, 'cron'],
  ['>out lango cron list', 1, 'cron'],
  ['2>/dev/null lango cron list', 1, 'cron'],
  ['lango cron list > out.txt 2>&1', 1, 'cron'],
  ['time lango cron list', 1, 'cron'],
  ['time -p lango cron list', 1, 'cron'],
  ['cd project\nlango cron list', 1, 'cron'],
  ['lango cron list # a comment', 1, 'cron'],
  ['lango serve &', 1, 'serve'],
  ['echo ok; lango', 2],
]

const QUOTING_AND_PATHS: readonly BlockCase[] = [
  ['l\\ango cron', 1, 'cron'],
  ['\\lango cron', 1, 'cron'],
  ["'lango' cron", 1, 'cron'],
  ['"lango" cron', 1, 'cron'],
  ["la''ngo cron", 1, 'cron'],
  ['la""ngo cron', 1, 'cron'],
  ["l'an'go cron", 1, 'cron'],
  ["$'lango' cron", 1, 'cron'],
  ["$'\\x6cango' cron", 1, 'cron'],
  ["$'\\154ango' cron", 1, 'cron'],
  ["$'\\u006cango' cron", 1, 'cron'],
  ['$"lango" cron', 1, 'cron'],
  ['lan\\\ngo cron', 1, 'cron'],
  ['lango \\\ncron', 1, 'cron'],
  ['lango "cron" list', 1, 'cron'],
  ["lango 'CRON' list", 1, 'cron'],
  ['$HOME/go/bin/lango cron', 1, 'cron'],
  ['~/go/bin/lango cron', 1, 'cron'],
  ['/usr/local/bin/lango cron', 1, 'cron'],
  ['./lango cron', 1, 'cron'],
  ['../bin/lango cron', 1, 'cron'],
  ['/opt/x/LANGO cron', 1, 'cron'],
  ['"$HOME"/bin/lango cron', 1, 'cron'],
  ['${HOME}/bin/lango cron', 1, 'cron'],
  ['"/usr/local/bin/lango" cron', 1, 'cron'],
  ['lango.exe cron', 1, 'cron'],
  ['LANGO.EXE cron', 1, 'cron'],
  ['lango.cmd cron', 1, 'cron'],
  ['lango.bat cron', 1, 'cron'],
  ['lango.com cron', 1, 'cron'],
  ['C:/tools/lango.exe cron', 1, 'cron'],
]

const CORE_RUNNERS: readonly BlockCase[] = [
  ['env lango cron', 1, 'cron'],
  ['env -i lango cron', 1, 'cron'],
  ['env -i PATH=/bin lango cron', 1, 'cron'],
  ['env -u HOME lango cron', 1, 'cron'],
  ['env -uHOME lango cron', 1, 'cron'],
  ['env -C /tmp lango cron', 1, 'cron'],
  ['env -- lango cron', 1, 'cron'],
  ['env - lango cron', 1, 'cron'],
  ['env --unset=HOME lango cron', 1, 'cron'],
  ['env --unset HOME lango cron', 1, 'cron'],
  ['/usr/bin/env lango cron', 1, 'cron'],
  ['env -S "lango cron list"', 1, 'cron'],
  ["env -S'lango cron'", 1, 'cron'],
  ['env --split-string="lango cron"', 1, 'cron'],
  ['sudo lango cron', 1, 'cron'],
  ['sudo -u root lango cron', 1, 'cron'],
  ['sudo -uroot lango cron', 1, 'cron'],
  ['sudo -g wheel lango cron', 1, 'cron'],
  ['sudo -E lango cron', 1, 'cron'],
  ['sudo -n -H lango cron', 1, 'cron'],
  ['sudo -C 3 lango cron', 1, 'cron'],
  ['sudo -D /tmp lango cron', 1, 'cron'],
  ['sudo -h host lango cron', 1, 'cron'],
  ['sudo -p prompt lango cron', 1, 'cron'],
  ['sudo -r role -t type lango cron', 1, 'cron'],
  ['sudo -T 10 -U bob lango cron', 1, 'cron'],
  ['sudo -- lango cron', 1, 'cron'],
  ['sudo FOO=1 lango cron', 1, 'cron'],
  ['sudo --user=root lango cron', 1, 'cron'],
  ['sudo --user root lango cron', 1, 'cron'],
  ['sudo -u root -- env lango cron', 1, 'cron'],
  ['doas lango cron', 1, 'cron'],
  ['doas -u root lango cron', 1, 'cron'],
  ['nohup lango serve &', 1, 'serve'],
  ['nohup lango serve > log 2>&1 &', 1, 'serve'],
  ['nice lango cron', 1, 'cron'],
  ['nice -n 10 lango cron', 1, 'cron'],
  ['nice -10 lango cron', 1, 'cron'],
  ['nice --adjustment=5 lango cron', 1, 'cron'],
  ['timeout 5 lango cron', 1, 'cron'],
  ['timeout 5s lango cron', 1, 'cron'],
  ['timeout -s KILL 5 lango cron', 1, 'cron'],
  ['timeout -k 1 5 lango cron', 1, 'cron'],
  ['timeout --signal=TERM 5 lango cron', 1, 'cron'],
  ['timeout --preserve-status 5 lango cron', 1, 'cron'],
  ['stdbuf -oL lango cron', 1, 'cron'],
  ['stdbuf -o L lango cron', 1, 'cron'],
  ['stdbuf -i0 -o0 -e0 lango cron', 1, 'cron'],
  ['setsid lango serve', 1, 'serve'],
  ['setsid -f lango serve', 1, 'serve'],
  ['exec lango cron', 1, 'cron'],
  ['exec -a foo lango cron', 1, 'cron'],
  ['exec -c lango cron', 1, 'cron'],
  ['exec -cl lango cron', 1, 'cron'],
  ['command lango cron', 1, 'cron'],
  ['command -p lango cron', 1, 'cron'],
  ['command -- lango cron', 1, 'cron'],
  ['builtin exec lango cron', 1, 'cron'],
  ['echo x | xargs lango cron', 1, 'cron'],
  ['xargs lango cron < ids', 1, 'cron'],
  ['xargs -I{} lango cron {}', 1, 'cron'],
  ['xargs -I {} lango cron {}', 1, 'cron'],
  ['xargs -n 1 lango cron', 1, 'cron'],
  ['xargs -P 4 -n1 lango cron', 1, 'cron'],
  ['xargs -0 lango cron', 1, 'cron'],
  ['xargs -d "\\n" lango cron', 1, 'cron'],
  ['xargs -a ids.txt lango cron', 1, 'cron'],
  ['xargs -r -t lango cron', 1, 'cron'],
  ['xargs -E END lango cron', 1, 'cron'],
  ['xargs -L 1 lango cron', 1, 'cron'],
  ['xargs -s 100 lango cron', 1, 'cron'],
  ['xargs --max-args=1 lango cron', 1, 'cron'],
  ['find . -exec lango cron {} \\;', 1, 'cron'],
  ['find . -name x -execdir lango cron {} +', 1, 'cron'],
  ['find . -ok lango cron {} \\;', 1, 'cron'],
  ['find . -okdir lango cron {} \\;', 1, 'cron'],
  ['find . -exec echo {} \\; -exec lango cron {} \\;', 1, 'cron'],
  ["find . -exec sh -c 'lango cron' \\;", 1, 'cron'],
  ["sh -c 'lango cron list'", 1, 'cron'],
  ["bash -c 'lango cron list'", 1, 'cron'],
  ["dash -c 'lango cron'", 1, 'cron'],
  ["zsh -c 'lango cron'", 1, 'cron'],
  ["ksh -c 'lango cron'", 1, 'cron'],
  ["/bin/sh -c 'lango cron'", 1, 'cron'],
  ["bash -lc 'lango cron'", 1, 'cron'],
  ["bash -xc 'lango cron'", 1, 'cron'],
  ["bash -e -c 'lango cron'", 1, 'cron'],
  ["bash -o pipefail -c 'lango cron'", 1, 'cron'],
  ["bash --norc -c 'lango cron'", 1, 'cron'],
  ["bash -c -- 'lango cron'", 1, 'cron'],
  ["sh -c 'cd /tmp && lango cron'", 1, 'cron'],
  ['sh -c "sh -c \'lango cron\'"', 1, 'cron'],
  ["sh -c '$0 cron' lango", 1, 'cron'],
  ['sh -c \'"$1" cron\' _ lango', 1, 'cron'],
  ['bash -c \'lango "$@"\' _ cron', 2],
  ['eval lango cron', 1, 'cron'],
  ["eval 'lango cron'", 1, 'cron'],
  ['eval "lango cron"', 1, 'cron'],
  ["eval l'an'go cron", 1, 'cron'],
  ['eval "$(echo lango cron)"', 2],
  ['eval \'eval "lango cron"\'', 1, 'cron'],
]

const EXTENDED_RUNNERS: readonly BlockCase[] = [
  ['watch lango cron list', 1, 'cron'],
  ['watch -n 5 lango cron list', 1, 'cron'],
  ["watch -n5 'lango cron list'", 1, 'cron'],
  ['flock /tmp/l lango cron', 1, 'cron'],
  ["flock /tmp/l -c 'lango cron'", 1, 'cron'],
  ['flock -w 5 /tmp/l lango cron', 1, 'cron'],
  ['strace lango cron', 1, 'cron'],
  ['strace -f -o trace.txt lango cron', 1, 'cron'],
  ['ltrace lango cron', 1, 'cron'],
  ["script -c 'lango cron' /dev/null", 1, 'cron'],
  ["script -qc 'lango cron' /dev/null", 1, 'cron'],
  ['script -q /dev/null lango cron', 1, 'cron'],
  ["su -c 'lango cron' root", 1, 'cron'],
  ["su root -c 'lango cron'", 1, 'cron'],
  ["su - root -c 'lango cron'", 1, 'cron'],
  ["su --command='lango cron'", 1, 'cron'],
  ['runuser -u bob -- lango cron', 1, 'cron'],
  ["runuser -l bob -c 'lango cron'", 1, 'cron'],
  ['parallel lango ::: cron bg', 1, 'cron'],
  ["parallel 'lango cron {}' ::: a b", 1, 'cron'],
  ["parallel ::: 'lango cron'", 1, 'cron'],
  ['npx lango cron', 1, 'cron'],
  ['npx -y lango cron', 1, 'cron'],
  ['npx lango@latest cron', 1, 'cron'],
  ['npx @acme/lango cron', 1, 'cron'],
  // The server's package, whose binary is `lango` (the README's `npx @lango/server serve`).
  ['npx @lango/server cron list', 1, 'cron'],
  ['npx --yes @lango/server@0.1.0 cron list', 1, 'cron'],
  ['npm exec @lango/server -- cron list', 1, 'cron'],
  ['npm x -y @lango/server cron', 1, 'cron'],
  ['pnpm dlx @lango/server cron list', 1, 'cron'],
  ['yarn dlx @lango/server cron', 1, 'cron'],
  ['bunx @LANGO/Server cron', 1, 'cron'],
  ['npx -p lango lango cron', 1, 'cron'],
  ['npx --package=lango lango cron', 1, 'cron'],
  ["npx -c 'lango cron'", 1, 'cron'],
  ['bunx lango cron', 1, 'cron'],
  ['pnpx lango cron', 1, 'cron'],
  ['pnpm exec lango cron', 1, 'cron'],
  ['pnpm dlx lango cron', 1, 'cron'],
  ['pnpm --filter api exec lango cron', 1, 'cron'],
  ['npm exec lango cron', 1, 'cron'],
  ['npm exec -- lango cron', 1, 'cron'],
  ['npm x lango cron', 1, 'cron'],
  ['yarn exec lango cron', 1, 'cron'],
  ['yarn dlx lango cron', 1, 'cron'],
  ['yarn run lango cron', 1, 'cron'],
  ['bun x lango cron', 1, 'cron'],
  ['bun run lango cron', 1, 'cron'],
  ['node node_modules/.bin/lango cron', 1, 'cron'],
  ['node ./node_modules/.bin/lango cron', 1, 'cron'],
  ['node --require ./hook.js ./bin/lango cron', 1, 'cron'],
  ['python3 /usr/local/bin/lango cron', 1, 'cron'],
  ['python3.12 ~/bin/lango cron', 1, 'cron'],
  ['python3 -m lango cron', 1, 'cron'],
  ['perl ./lango cron', 1, 'cron'],
  ['bash ./lango cron', 1, 'cron'],
  ['sh lango cron', 1, 'cron'],
  ['source lango', 2],
  ['. ./lango', 2],
  ['cmd.exe /c lango cron', 1, 'cron'],
  ['cmd /C "lango cron"', 1, 'cron'],
  ['cmd /c lango.exe cron', 1, 'cron'],
  ['busybox sh -c "lango cron"', 1, 'cron'],
  ['go run ./cmd/lango cron', 1, 'cron'],
  ['go run github.com/acme/lango@latest cron', 1, 'cron'],
  ['go run -exec lango ./cmd/server', 2],
  ['ssh host lango cron', 1, 'cron'],
  ["ssh -p 22 -i key host 'lango cron'", 1, 'cron'],
  ["tmux new -d 'lango serve'", 1, 'serve'],
  ["tmux send-keys -t main 'lango cron list' Enter", 1, 'cron'],
  ['screen -dmS s lango serve', 1, 'serve'],
  ["trap 'lango cron' EXIT", 1, 'cron'],
  ["alias x='lango cron'", 1, 'cron'],
  ["echo 'lango cron' | at now", 1, 'cron'],
  ['ionice -c 3 lango cron', 1, 'cron'],
  ['taskset -c 0 lango cron', 1, 'cron'],
  ['chrt -f 10 lango cron', 1, 'cron'],
  ['unshare -r lango cron', 1, 'cron'],
  ['nsenter -t 1 -m lango cron', 1, 'cron'],
  ['systemd-run --user lango serve', 1, 'serve'],
  ['pkexec lango cron', 1, 'cron'],
  ['caffeinate -i lango serve', 1, 'serve'],
  ['unbuffer lango cron', 1, 'cron'],
  ['rlwrap lango cron', 1, 'cron'],
  ['chroot / lango cron', 1, 'cron'],
  ['wsl lango cron', 1, 'cron'],
  ['wsl -e lango cron', 1, 'cron'],
  ['poetry run lango cron', 1, 'cron'],
  ['uv run lango cron', 1, 'cron'],
  ['uvx lango cron', 1, 'cron'],
  ['pipx run lango cron', 1, 'cron'],
  ['bundle exec lango cron', 1, 'cron'],
  ['conda run -n base lango cron', 1, 'cron'],
  ['mise exec -- lango cron', 1, 'cron'],
  ['direnv exec . lango cron', 1, 'cron'],
  ['op run -- lango cron', 1, 'cron'],
  ['dotenv -- lango cron', 1, 'cron'],
  ['aws-vault exec prod -- lango cron', 1, 'cron'],
  ["nix-shell --run 'lango cron'", 1, 'cron'],
  ['nix shell nixpkgs#jq -c lango cron', 1, 'cron'],
  ['gdb --args lango cron', 1, 'cron'],
  ['entr lango cron', 1, 'cron'],
  ["entr -s 'lango cron'", 1, 'cron'],
  ['valgrind --leak-check=full lango cron', 1, 'cron'],
  ['firejail --quiet lango cron', 1, 'cron'],
  ['torsocks lango cron', 1, 'cron'],
  ['proxychains4 -f p.conf lango cron', 1, 'cron'],
  ['sudo env nohup nice -n 5 timeout 10 lango cron', 1, 'cron'],
]

const INTERPRETER_CODE: readonly BlockCase[] = [
  ['python3 -c "import os; os.system(\'lango cron list\')"', 1, 'cron'],
  ['python -c \'import subprocess; subprocess.run(["lango", "memory"])\'', 1, 'memory'],
  ["node -e \"require('child_process').execSync('lango cron list')\"", 1, 'cron'],
  ["node --eval \"require('child_process').spawnSync('/usr/bin/lango')\"", 2],
  ['perl -e \'system("lango cron")\'', 1, 'cron'],
  ["perl -le 'print qx(lango cron)'", 1, 'cron'],
  ['ruby -e \'system("lango", "cron")\'', 1, 'cron'],
  ['php -r \'shell_exec("lango cron");\'', 1, 'cron'],
  ['awk \'BEGIN { system("lango cron") }\'', 1, 'cron'],
  ['pwsh -c "lango cron list"', 1, 'cron'],
  ['powershell -Command "& lango cron"', 1, 'cron'],
  ['osascript -e \'do shell script "lango cron"\'', 1, 'cron'],
  ["bun -e \"Bun.spawn(['lango', 'cron'])\"", 1, 'cron'],
  ['deno eval \'new Deno.Command("lango").spawn()\'', 2],
  ['python3 - <<EOF\nimport os\nos.system("lango cron")\nEOF', 1, 'cron'],
  ['echo \'import os; os.system("lango cron")\' | python3', 1, 'cron'],
]

const AMBIGUOUS: readonly BlockCase[] = [
  ['L=lango; $L cron', 1, 'cron'],
  ['L=lango; "$L" cron', 1, 'cron'],
  ['L=lango; ${L} cron', 1, 'cron'],
  ['export L=/usr/bin/lango; $L cron', 1, 'cron'],
  ['${X:-lango} cron', 1, 'cron'],
  ['${X:=lango} cron', 1, 'cron'],
  ['${X-lango} cron', 1, 'cron'],
  ['$(echo lango) cron', 1, 'cron'],
  ['`echo lango` cron', 1, 'cron'],
  ['"$(echo lango)" cron', 1, 'cron'],
  ["$(printf '%s' lango) cron", 1, 'cron'],
  ['a=lan; b=go; $a$b cron', 1, 'cron'],
  ['for c in lango; do $c cron; done', 1, 'cron'],
  ['X=LANGO; ${X,,} cron', 1, 'cron'],
  ['X=xlango; ${X#x} cron', 1, 'cron'],
  ['X=lingo; ${X/i/a} cron', 1, 'cron'],
  ['echo lango; $CMD cron', 2],
  // find's `{}` in command position: the program is each file found, so the text does not fix it.
  ['find /opt/bin -name lango -exec {} cron list \\;', 2],
  ['find /opt/bin -name lango -exec {} +', 2],
  ['find /opt/bin -name lango -execdir {} cron \\;', 2],
  ['find /opt/bin -name lango -ok ./{} cron \\;', 2],
  ['find . -exec echo {} \\; -name lango -exec {} cron \\;', 2],
  ['find . -name lango -print0 | xargs -0 -I{} {} cron', 2],
  ['CMD=$(which lango); $CMD cron', 2],
  ['$(which lango) cron', 2],
  ['lan?o cron', 1, 'cron'],
  ['lang[o] cron', 1, 'cron'],
  ['l*o cron', 1, 'cron'],
  ['@(lango) cron', 1, 'cron'],
  ['{lango,x} cron', 1, 'cron'],
  ['l{a,}ngo cron', 1, 'cron'],
  ['echo lango | sh', 2],
  ["echo 'lango cron' | bash", 1, 'cron'],
  ["printf 'lango cron\\n' | sh", 1, 'cron'],
  ['bash <<< "lango cron"', 1, 'cron'],
  // A script operand that is the shell's own input.
  ['sh /dev/stdin <<< "lango cron"', 1, 'cron'],
  ['bash --norc /dev/stdin <<< "lango cron"', 1, 'cron'],
  ['sh /dev/fd/0 <<< "lango cron"', 1, 'cron'],
  ['bash /proc/self/fd/0 <<< "lango cron"', 1, 'cron'],
  ['cat <<< "lango cron" | sh /dev/stdin', 1, 'cron'],
  ['sh /dev/stdin <<EOF\nlango cron list --json\nEOF', 1, 'cron'],
  ['sh ../../../../../../../../dev/stdin <<< "lango cron"', 1, 'cron'],
  ['cd /; sh dev/stdin <<< "lango cron"', 1, 'cron'],
  ['sh /proc/self/root/dev/stdin <<< "lango cron"', 1, 'cron'],
  ['sh /proc/self/task/1/fd/0 <<< "lango cron"', 1, 'cron'],
  ['bash <<EOF\nlango cron\nEOF', 1, 'cron'],
  ["sh <<'EOF'\nlango cron\nEOF", 1, 'cron'],
  ['cat <<EOF | sh\nlango cron\nEOF', 1, 'cron'],
  ['echo bGFuZ28gY3Jvbg== | base64 -d | sh', 1, 'cron'],
  ['base64 -d <<< bGFuZ28gY3Jvbg== | bash', 1, 'cron'],
  ['echo ognal | rev | sh', 2],
  ["printf '\\154\\141\\156\\147\\157 cron' | sh", 1, 'cron'],
  ['echo -e "\\x6cango cron" | sh', 1, 'cron'],
  ['sh < lango', 2],
  ['bash <(echo lango cron)', 1, 'cron'],
  ['source <(echo lango cron)', 1, 'cron'],
  ['echo lango cron | sudo bash', 1, 'cron'],
  ['{ echo lango cron; } | (sh)', 1, 'cron'],
  ['lango() { echo hi; }', 2],
  ['function lango { :; }', 2],
]

const SPLITTING_TOOLS_AND_WRITES: readonly BlockCase[] = [
  ['c="lango cron"; $c', 2],
  ['IFS=,; c=lango,cron; $c', 2],
  ['echo lango cron | xargs sh -c', 2],
  ['echo lango | xargs -I{} sh -c "{} cron"', 1, 'cron'],
  ['parallel {} cron ::: lango', 1, 'cron'],
  ["PS4='$(lango cron)' bash -xc :", 1, 'cron'],
  ["PROMPT_COMMAND='lango cron' bash -i", 1, 'cron'],
  ['GIT_SSH_COMMAND=lango git fetch', 2],
  ['env EDITOR="lango config" git commit', 1, 'config'],
  ['export GIT_PAGER="lango memory"', 1, 'memory'],
  ['SUDO_ASKPASS=/usr/bin/lango sudo -A true', 2],
  ['BASH_ENV=./lango bash -c :', 2],
  ["echo 'lango cron' > run.sh; sh run.sh", 1, 'cron'],
  ["echo 'lango cron' > run.sh && chmod +x run.sh && ./run.sh", 1, 'cron'],
  ['echo lango cron | tee x.sh >/dev/null; bash x.sh', 1, 'cron'],
  ['cat > r.sh <<EOF\nlango cron\nEOF\nsh r.sh', 1, 'cron'],
  ["printf 'lango cron' >> r.sh; . ./r.sh", 1, 'cron'],
  ['ln -s "$(which lango)" ./l && ./l cron', 1, 'cron'],
  ['cp /usr/bin/lango /tmp/x; /tmp/x cron', 1, 'cron'],
  ['hash -p /usr/bin/lango x; x cron', 2],
  ['echo \'import os; os.system("lango")\' > a.py; python3 a.py', 2],
]

/** Values joined from arrays, printed by `printf -v` from variables, or reached through namerefs. */
const JOINS_PRINTF_AND_NAMEREFS: readonly BlockCase[] = [
  ['a=(l a n g o); IFS=; c="${a[*]}"; $c', 2],
  ['IFS=; a=(lan go); c="${a[*]}"; $c', 2],
  ['read -a a <<< "lan go"; IFS=; c="${a[*]}"; $c', 2],
  ['a=(lan go); IFS=; c=${a[*]}; $c cron', 1, 'cron'],
  ['set -- lan go; IFS=; c="$*"; $c', 2],
  ['sh -c \'IFS=; c="$*"; $c cron\' _ lan go', 1, 'cron'],
  ['a=(lan go); printf -v c %s "${a[@]}"; $c', 2],
  ['c=lan; d=go; printf -v e %s%s $c $d; $e', 2],
  ['a=(lan go); printf -v c %s%s "${a[@]}"; $c cron', 1, 'cron'],
  ['printf -v c %s%s lan go; $c', 2],
  ['a=(lan go); c="${a[0]}${a[1]}"; $c', 2],
  ['a=(x lango); for c in "${a[@]}"; do $c cron; done', 1, 'cron'],
  ['declare -n r=c; c=lango; $r', 2],
  ['typeset -n r=c; c=lango; $r', 2],
  ["bash -c 'declare -n r=c; c=lango; $r'", 2],
  ['declare -n r=c; c=lango; $r cron', 1, 'cron'],
  ['declare -n r=c; r=lango; $c', 2],
  ['declare -n r; r=c; c=lango; $r', 2],
  ['declare -n r=a; a=(x lango); ${r[1]}', 2],
  ['f() { local -n r=$1; $r; }; c=lango; f c', 2],
  ['g=c; c=lango; ${!g}', 2],
  ['c=LANGO; ${c,,}', 2],
  ['mapfile -t a <<< lango; ${a[0]}', 2],
]

/**
 * Code parsed again after the calling shell expanded it (`eval`, `sh -c`, piped or fed code): a join
 * made inside double quotes arrives without its quotes, and `$1` in `sh -c "$1"` is the caller's.
 */
const EXPANDED_THEN_REPARSED: readonly BlockCase[] = [
  ['a=(lan go); IFS=; eval "${a[*]}"', 2],
  ['a=(l a n g o); IFS=; eval "${a[*]}"', 2],
  ['a=(lan go); IFS=; eval "${a[*]} cron"', 1, 'cron'],
  ['set -- lan go; IFS=; eval "$*"', 2],
  ['a=(lan go); IFS=; sh -c "${a[*]}"', 2],
  ['a=(lan go); IFS=; bash -c "${a[*]} cron list"', 1, 'cron'],
  ['a=(lan go); IFS=; echo "${a[*]}" | sh', 2],
  ['a=(lan go); IFS=; echo "${a[*]} cron" | bash', 1, 'cron'],
  ['a=(lan go); IFS=; printf "%s\\n" "${a[*]}" | sh', 2],
  ['a=(lan go); IFS=; sh <<< "${a[*]}"', 2],
  ['a=(lan go); IFS=; sh <<EOF\n${a[*]}\nEOF', 2],
  ['set -- lango; sh -c "$1"', 2],
  ['set -- lango cron; sh -c "$*"', 2],
  ['set -- lan go; IFS=; sh -c "$*" x', 2],
  ['f() { sh -c "$1"; }; f lango', 2],
  ['f() { IFS=; sh -c "$*"; }; f lan go', 2],
]

const PARSE_ERRORS: readonly BlockCase[] = [
  ['echo "unterminated lango cron', 1, 'cron'],
  ["echo 'unterminated lango", 2],
  ["lango cron 'unterminated", 1, 'cron'],
  ['echo $(lango', 2],
  ['if lango doctor; then', 1, 'doctor'],
  [') lango cron', 1, 'cron'],
  ["echo 'x' )( lango", 2],
  ['echo ${x:-lango', 2],
  ['echo `lango', 2],
]

const ALLOWED: readonly string[] = [
  '',
  '   ',
  'ls -la',
  'echo lango',
  'echo "lango cron list"',
  "echo 'lango cron list'",
  'echo lango cron',
  'printf "lango\\n"',
  'cat lango.yaml',
  'cat ./lango',
  'cat lango',
  'cat < lango',
  'less lango.log',
  'mylango',
  'mylango cron',
  'lango-helper',
  'lango-helper cron',
  'lango_test',
  'lango_test cron',
  'lango.sh',
  'lango.py cron',
  './scripts/lango.sh',
  'bash ./scripts/lango.sh',
  'sh ./run-tasks.sh',
  'lango=1',
  'lango=1 ls',
  'export lango=1',
  'which lango',
  'type lango',
  'type -a lango',
  'command -v lango',
  'command -V lango',
  'man lango',
  'hash lango',
  'whereis lango',
  'grep lango x',
  'grep -r "lango cron" .',
  'rg -n lango src',
  'docker logs lango',
  'docker exec lango ls',
  'docker run --name lango img',
  'kubectl logs deploy/lango',
  'cd lango',
  'cd lango && make',
  'mkdir -p lango',
  'ls ~/.lango',
  'echo hi > lango',
  'echo hi >> lango.txt',
  'git log -- lango',
  'git commit -m "fix lango cron"',
  'git clone https://github.com/acme/lango',
  'cp lango lango.bak',
  'mv lango /usr/local/bin/',
  'tar czf lango.tgz lango',
  'ps aux | grep lango',
  'pgrep -f lango',
  'systemctl status lango',
  'journalctl -u lango',
  // A script file given text on stdin reads it as data.
  'sh script.sh <<< "lango cron"',
  'curl -fsSL https://lango.dev/install.sh -o install.sh',
  'kill $(pgrep mylango)',
  "echo '$(lango cron)'",
  "echo '`lango`'",
  'echo "\\$(lango cron)"',
  'echo \\`lango\\`',
  'echo "\\`lango\\`"',
  'cat <<EOF\nlango cron\nEOF',
  "cat <<'EOF'\n$(lango cron)\nEOF",
  'cat <<< "lango cron"',
  '# lango cron',
  'ls # lango cron',
  'echo hi; # lango',
  'echo lango | grep lango',
  'echo lango | cat',
  'sort lango.txt | uniq',
  'python3 -c "print(1)"',
  'python3 -c \'print("lango.yaml")\'',
  'node -e "console.log(1)"',
  'node -e "console.log(\'mylango\')"',
  'python3 script.py',
  'node app.js',
  'npx prettier --write .',
  'pnpm exec vitest run',
  'npm run build',
  'npm exec -- tsc --noEmit',
  'yarn run build',
  'sudo apt-get update',
  'env FOO=bar node app.js',
  'env lango=1 ls',
  'nohup ./server &',
  'timeout 5 curl https://example.com',
  'xargs rm < files.txt',
  'find . -name "*.lango" -exec rm {} \\;',
  'find . -name lango -print',
  "find . -name '*.sh' -exec {} \\;",
  'find . -name lango -exec ls -l {} +',
  'find . -name lango | xargs -I{} ls -l {}',
  "sh -c 'echo lango'",
  "bash -c 'cat lango.yaml'",
  'bash -c "mylango cron"',
  'eval echo lango',
  "watch -n 1 'ls lango'",
  'echo lango | xargs echo',
  'ssh host ls lango',
  'sudo -e lango.conf',
  '$EDITOR file.txt',
  '"$CC" -o out main.c',
  '${PREFIX}go version',
  'X=lan; echo ${X}go',
  'for f in *.log; do gzip "$f"; done',
  'go build ./cmd/lango',
  'go install github.com/acme/lango@latest',
  'go run ./cmd/server',
  'LANGO_HOME=/x ls',
  'echo $LANGO_HOME',
  'echo lango > notes.txt; cat notes.txt',
  'echo mylango | sh',
  "echo 'echo lango' | bash",
  'bash <<< "echo lango"',
  'tmux new -d "htop"',
  "alias ll='ls -la'",
  "trap 'rm -f lock' EXIT",
  'printf "%s\\n" lango',
  'test -x /usr/bin/lango && echo yes',
  '[ -x ./lango ] && echo present',
  "awk '{ print $1 }' lango.log",
  'sed -n "s/lango/x/p" file',
  'ln -s /opt/lango/bin/lango ~/bin/lango',
  'chmod +x lango',
  'file lango',
  'stat ./lango',
  'c="ls -la"; $c',
  'c="lango cron"; "$c"',
  'c="lango cron"; echo "$c"',
  'echo hi > out.txt; cat out.txt',
  "echo 'lango cron' > notes.txt; cat notes.txt",
  'echo "print(1)" > a.py; python3 a.py',
  'EDITOR=vim git commit',
  'export PAGER=less',
  'GIT_SSH_COMMAND="ssh -i key" git fetch',
  '((count++))',
  'for ((i=0;i<3;i++)); do echo $i; done',
  '(( x > 1 )) && echo big',
  'echo lango | xargs -I{} echo {}',
  'parallel echo ::: lango',
  'cp lango.yaml backup.yaml',
  'a=(x y); IFS=,; echo "${a[*]}"',
  'a=(ls -la); c="${a[*]}"; $c',
  'a=(ls /usr/bin/lango); "${a[@]}"',
  'a=(lan go); c="${a[@]}"; $c',
  'args=(lan go); IFS=; ${args[*]}',
  'a=(x y); printf -v c %s, "${a[@]}"; $c',
  'declare -n r=c; c=hello; echo $r',
  'declare -n r=c; c=hello; $r',
  'f() { local -n out=$1; out=done; }; f result; echo "$result"',
]

const BLOCK_TABLES: Readonly<Record<string, readonly BlockCase[]>> = {
  'seed scenarios': SEED_SCENARIOS,
  'lists, pipelines, compounds and substitutions': LISTS_AND_COMPOUNDS,
  'quote removal, paths and case': QUOTING_AND_PATHS,
  'core runners': CORE_RUNNERS,
  'extended runners': EXTENDED_RUNNERS,
  'interpreter code': INTERPRETER_CODE,
  'ambiguous cases': AMBIGUOUS,
  'field splitting, tool variables and write-then-run': SPLITTING_TOOLS_AND_WRITES,
  'array joins, printf -v and namerefs': JOINS_PRINTF_AND_NAMEREFS,
  'expanded, then parsed again': EXPANDED_THEN_REPARSED,
  'parse errors fail closed': PARSE_ERRORS,
}

const ALL_BLOCKS: readonly BlockCase[] = Object.values(BLOCK_TABLES).flat()

describe('classifyLangoExec: block', () => {
  for (const [title, cases] of Object.entries(BLOCK_TABLES)) {
    describe(title, () => {
      it.each(cases.map(([command, phase, subcommand]) => ({ command, phase, subcommand })))(
        'blocks $command',
        ({ command, phase, subcommand }) => {
          const verdict = classifyLangoExec(command)
          expect(verdict).toMatchObject({ verdict: 'block', phase })
          if (verdict.verdict === 'block') expect(verdict.subcommand).toBe(subcommand)
        },
      )
    })
  }
})

describe('classifyLangoExec: allow', () => {
  it.each(ALLOWED.map((command) => ({ command })))('allows $command', ({ command }) => {
    expect(classifyLangoExec(command)).toEqual({ verdict: 'allow' })
    expect(blockLangoExec(command, { automationAvailable: true })).toBe('')
  })
})

describe('block reasons', () => {
  it.each<[string, LangoBlockReason]>([
    ['lango cron list', 'command'],
    ['node ./node_modules/.bin/lango cron', 'script'],
    ['lango() { :; }', 'function'],
    ['echo lango; $CMD', 'ambiguous'],
    ['python3 -c \'import os; os.system("lango")\'', 'interpreter-code'],
    ['echo "unterminated lango', 'parse-error'],
    ['x'.repeat(MAX_GUARD_INPUT_LENGTH + 1), 'too-long'],
    [`${'eval '.repeat(20)}lango`, 'too-complex'],
  ])('%#: reason %s', (command, reason) => {
    expect(classifyLangoExec(command)).toMatchObject({ verdict: 'block', reason })
  })
})

describe('blockLangoExec messages', () => {
  const on = { automationAvailable: true }
  const off = { automationAvailable: false }

  const automation = [
    { command: 'lango cron list', label: 'Cron', feature: 'cron' },
    { command: 'lango bg list', label: 'Background Tasks', feature: 'background' },
    { command: 'lango background submit x', label: 'Background Tasks', feature: 'background' },
    { command: 'lango workflow run f.yaml', label: 'Workflow', feature: 'workflow' },
  ] as const

  it.each(automation)('$command lists the automation tools when the feature is on', ({ command }) => {
    const verdict = classifyLangoExec(command)
    const entry = LANGO_SUBCOMMAND_GUIDANCE.find(
      (guidance) => verdict.verdict === 'block' && guidance.subcommands.includes(verdict.subcommand ?? ''),
    )
    expect(entry?.kind).toBe('automation')
    const message = blockLangoExec(command, on)
    for (const tool of entry?.tools ?? []) expect(message).toContain(tool)
    expect(message).not.toMatch(/in Settings/)
    expect(message).toMatch(/passphrase authentication/)
  })

  it.each(automation)(
    '$command says to enable $label in Settings when the feature is off',
    ({ command, label }) => {
      const message = blockLangoExec(command, off)
      expect(message).toContain(`enable ${label} in Settings`)
      expect(message).toMatch(/passphrase authentication/)
    },
  )

  it.each(automation)('$command honours the per-feature flag object', ({ command, label, feature }) => {
    const onlyThis: AutomationAvailability = { [feature]: true }
    const allButThis: AutomationAvailability = {
      cron: true,
      background: true,
      workflow: true,
      [feature]: false,
    }
    expect(blockLangoExec(command, { automationAvailable: onlyThis })).not.toContain('in Settings')
    expect(blockLangoExec(command, { automationAvailable: allButThis })).toContain(
      `enable ${label} in Settings`,
    )
    expect(blockLangoExec(command, { automationAvailable: {} })).toContain(`enable ${label} in Settings`)
  })

  it('names exactly the cron, bg and workflow tools of the seeds', () => {
    expect(blockLangoExec('lango cron list', on)).toContain(
      'cron_add, cron_list, cron_pause, cron_resume, cron_remove, cron_history',
    )
    expect(blockLangoExec('lango bg list', on)).toContain(
      'bg_submit, bg_status, bg_list, bg_result, bg_cancel',
    )
    expect(blockLangoExec('lango workflow list', on)).toContain(
      'workflow_run, workflow_status, workflow_list, workflow_cancel, workflow_rerun, workflow_save',
    )
  })

  it.each([
    ['lango graph query', /graph_query/],
    ['lango memory list', /memory_list_observations/],
    ['lango p2p peers', /p2p_status/],
    ['LANGO SECURITY DB-MIGRATE', /secrets_get/],
    ['lango payment send', /payment_send/],
  ] as const)('%s lists its built-in tools regardless of automation flags', (command, tool) => {
    const verdict = classifyLangoExec(command)
    const entry = LANGO_SUBCOMMAND_GUIDANCE.find(
      (guidance) => verdict.verdict === 'block' && guidance.subcommands.includes(verdict.subcommand ?? ''),
    )
    expect(entry?.kind).toBe('tools')
    for (const flags of [on, off]) {
      const message = blockLangoExec(command, flags)
      expect(message).toMatch(tool)
      for (const name of entry?.tools ?? []) expect(message).toContain(name)
      expect(message).not.toContain('in Settings')
    }
  })

  it.each(['config', 'doctor', 'settings', 'serve', 'onboard', 'agent'])(
    'lango %s asks the user to run it in their terminal',
    (subcommand) => {
      const message = blockLangoExec(`lango ${subcommand}`, on)
      expect(message).toMatch(/passphrase authentication during bootstrap/)
      expect(message).toMatch(/non-interactive subprocess/)
      expect(message).toMatch(/ask the user to run the command directly in their terminal/)
    },
  )

  it('gives the catch-all passphrase message in phase 2', () => {
    const message = blockLangoExec('cd /tmp && lango frobnicate', on)
    expect(classifyLangoExec('cd /tmp && lango frobnicate')).toMatchObject({ phase: 2 })
    expect(message).toMatch(/passphrase authentication during bootstrap/)
    expect(message).toMatch(/non-interactive subprocess/)
    expect(message).toMatch(/directly in their terminal/)
  })

  it('explains the input cap and the nesting cap', () => {
    expect(blockLangoExec('x'.repeat(MAX_GUARD_INPUT_LENGTH + 1), on)).toMatch(/longer than the 64 KiB/)
    expect(blockLangoExec(`${'eval '.repeat(20)}true`, on)).toMatch(/nests shells, eval or runners deeper/)
  })

  it('renders an allow classification as the empty string', () => {
    expect(langoExecMessage({ verdict: 'allow' }, on)).toBe('')
  })

  it('never echoes the command text back', () => {
    for (const [command] of ALL_BLOCKS) {
      const trimmed = command.trim()
      if (trimmed.length <= 'lango'.length) continue
      for (const flags of [on, off]) expect(blockLangoExec(command, flags)).not.toContain(trimmed)
    }
  })

  it.each([
    'lango cron add --prompt "token=S3CR3T-CANARY-9f2"',
    'lango frobnicate S3CR3T-CANARY-9f2',
    'echo lango; $CMD S3CR3T-CANARY-9f2',
    'echo "S3CR3T-CANARY-9f2 lango',
    `lango ${'S3CR3T-CANARY-9f2 '.repeat(4000)}`,
    `sh -c 'lango config set key S3CR3T-CANARY-9f2'`,
  ])('keeps a secret out of the message: %#', (command) => {
    for (const flags of [on, off]) {
      const message = blockLangoExec(command, flags)
      expect(message).not.toBe('')
      expect(message).not.toContain('S3CR3T')
    }
  })
})

describe('limits', () => {
  it('blocks input over the cap and analyses input at the cap', () => {
    const atCap = 'echo a; '.repeat(MAX_GUARD_INPUT_LENGTH / 8)
    expect(atCap.length).toBe(MAX_GUARD_INPUT_LENGTH)
    expect(classifyLangoExec(atCap)).toEqual({ verdict: 'allow' })
    expect(classifyLangoExec(`${atCap} `)).toMatchObject({ verdict: 'block', reason: 'too-long' })
  })

  it('follows nested shells within the cap and fails closed beyond it', () => {
    const nest = (levels: number, inner: string): string => {
      let command = inner
      for (let level = 0; level < levels; level++) command = `sh -c ${shellQuote(command)}`
      return command
    }
    expect(classifyLangoExec(nest(6, 'lango cron'))).toMatchObject({
      phase: 1,
      subcommand: 'cron',
      reason: 'command',
    })
    expect(classifyLangoExec(nest(6, 'echo ok'))).toEqual({ verdict: 'allow' })
    expect(classifyLangoExec(nest(9, 'echo ok'))).toMatchObject({ verdict: 'block', reason: 'too-complex' })
  })

  it('fails closed past the parser nesting limit', () => {
    expect(classifyLangoExec(`${'$('.repeat(300)}${')'.repeat(300)}`)).toMatchObject({
      reason: 'too-complex',
    })
    expect(classifyLangoExec(`${'${a:-'.repeat(300)}lango${'}'.repeat(300)}`)).toMatchObject({
      verdict: 'block',
    })
  })

  it('stays fast on adversarial input', () => {
    const inputs = [
      '$ao'.repeat(20_000),
      '{a,b}'.repeat(12_000),
      '*/'.repeat(30_000),
      `printf '${'A'.repeat(30_000)}%s' ${'1 '.repeat(15_000)}| sh`,
      `X=a; ${"sh -c '$X' ; ".repeat(4_000)}`,
      `echo x${' | tee'.repeat(10_000)} | sh`,
      '`'.repeat(60_000),
      // Runner readings that branch, vanishing heads and self-doubling variables (issue 11).
      `${'nice --zz nice '.repeat(5_000)}lango`,
      `${'bwrap --future '.repeat(5_000)}lango`,
      `${'sudo -h sudo -h '.repeat(4_000)}lango`,
      `${'su root -c '.repeat(6_000)}x`,
      `${'$x '.repeat(20_000)}lango`,
      `${'a=$b$b; b=$a$a; '.repeat(3_000)}$a`,
      `${'x=${x}${x}; '.repeat(5_000)}lan\${x}go`,
      `awk '${'BEGIN{system("x")}'.repeat(3_000)}'`,
      `${'env -S '.repeat(9_000)}lango`,
      `f() { echo ${'x '.repeat(2_000)}; }; ${'f a; '.repeat(10_000)}`,
      `alias a='${'a '.repeat(1_000)}'; ${'a x; '.repeat(5_000)}`,
      `${Array.from({ length: 60 }, (_, index) => `f${index}() { f${index + 1} x; }; `).join('')}f0 x`,
      `x=a; ${'x+=$x; '.repeat(5_000)}$x`,
    ]
    // Each takes well under 0.2 s here; a blow-up (exponential expansion, backtracking) takes
    // minutes. The bound is generous for a loaded machine and far below that.
    for (const input of inputs) {
      const started = performance.now()
      classifyLangoExec(input.slice(0, MAX_GUARD_INPUT_LENGTH))
      expect(performance.now() - started).toBeLessThan(5_000)
    }
  })
})

describe('properties', () => {
  const random = seededRandom(0x1a960)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T

  it('never blocks random mixes of safe words', () => {
    const programs = [
      'echo',
      'ls',
      'cat',
      'grep',
      'wc',
      'head',
      'printf',
      'sort',
      'true',
      'mylango',
      'lango-helper',
    ]
    const words = [
      'lango',
      'LANGO',
      'mylango',
      'lango.yaml',
      'lango-helper',
      'lango_test',
      'lango.sh',
      './lango.log',
      '"lango cron"',
      "'lango memory'",
      '-la',
      'x',
      '$HOME',
      '"$(echo lango)"',
      '~/.lango',
      'lango=1',
    ]
    const operators = [' ; ', ' && ', ' || ', ' | ', '\n', ' & ']
    for (let round = 0; round < 300; round++) {
      const commands: string[] = []
      for (let count = 1 + Math.floor(random() * 4); count > 0; count--) {
        const args = Array.from({ length: Math.floor(random() * 4) }, () => pick(words))
        commands.push([pick(programs), ...args].join(' '))
      }
      const command = commands.map((part, index) => (index === 0 ? part : pick(operators) + part)).join('')
      expect(classifyLangoExec(command), command).toEqual({ verdict: 'allow' })
    }
  })

  it('always blocks lango in command position behind random wrappers', () => {
    const spellings = [
      'lango',
      'LANGO',
      '/usr/local/bin/lango',
      "l'an'go",
      'l\\ango',
      '"lango"',
      '$HOME/bin/lango',
    ]
    const subcommands = ['cron', 'bg', 'workflow', 'memory', 'config', 'doctor']
    const argvWrappers: ((command: string) => string)[] = [
      (command) => `sudo -u root ${command}`,
      (command) => `env -i A=1 ${command}`,
      (command) => `nohup ${command}`,
      (command) => `timeout -k 1 5 ${command}`,
      (command) => `nice -n 5 ${command}`,
      (command) => `xargs -n 1 ${command} < ids`,
      (command) => `command ${command}`,
      (command) => `exec ${command}`,
      (command) => `stdbuf -oL ${command}`,
      (command) => `setsid ${command}`,
      (command) => `find . -exec ${command} {} \\;`,
    ]
    const shellWrappers: ((command: string) => string)[] = [
      (command) => `sh -c ${shellQuote(command)}`,
      (command) => `bash -lc ${shellQuote(command)}`,
      (command) => `eval ${shellQuote(command)}`,
      (command) => `(${command})`,
      (command) => `{ ${command}; }`,
      (command) => `echo "$( ${command})"`,
      (command) => `true && ${command}`,
      (command) => `false || ${command}`,
      (command) => `if true; then ${command}; fi`,
      (command) => `for i in 1; do ${command}; done`,
      (command) => `echo x | { ${command}; }`,
      (command) => `ls; ${command}`,
      (command) => `! ${command}`,
    ]
    // These need a simple command: `FOO=bar for …` would not be a loop.
    const prefixWrappers: ((command: string) => string)[] = [
      (command) => `FOO=bar ${command}`,
      (command) => `${command} > out.txt 2>&1`,
      (command) => `< /dev/null ${command}`,
    ]
    for (let round = 0; round < 300; round++) {
      const subcommand = pick(subcommands)
      let command = `${pick(spellings)} ${subcommand} list`
      let simple = true
      for (let layer = 1 + Math.floor(random() * 3); layer > 0; layer--) {
        const choice = random()
        if (choice < 0.4) {
          if (!simple) command = `sh -c ${shellQuote(command)}`
          command = pick(argvWrappers)(command)
          simple = !/[<>;]/.test(command)
        } else if (choice < 0.55) {
          if (!simple) command = `sh -c ${shellQuote(command)}`
          command = pick(prefixWrappers)(command)
          simple = false
        } else {
          command = pick(shellWrappers)(command)
          simple = command.startsWith('sh -c') || command.startsWith('bash -lc') || command.startsWith('eval')
        }
      }
      expect(classifyLangoExec(command), command).toEqual({
        verdict: 'block',
        phase: 1,
        subcommand,
        reason: 'command',
      })
    }
  })
})

const hasBash = existsSync('/bin/bash') || existsSync('/usr/bin/bash')

/**
 * Cross-checks the guard against bash itself: a fake `lango` on PATH records every run, so a block
 * case must really run lango and an allow case must not. Only commands safe to execute are listed.
 */
describe.skipIf(!hasBash)('bash oracle', () => {
  let root = ''
  let marker = ''
  let bin = ''

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'lango-guard-'))
    bin = join(root, 'bin')
    mkdirSync(bin)
    marker = join(root, 'ran')
    const fake = `#!/bin/sh\necho "$*" >> "${marker}"\n`
    for (const path of [join(bin, 'lango'), join(root, 'lango')]) {
      writeFileSync(path, fake)
      chmodSync(path, 0o755)
    }
    writeFileSync(join(root, 'lango.yaml'), 'x: 1\n')
    writeFileSync(join(root, 'ids'), 'a\n')
  })

  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  const run = (command: string): boolean => {
    rmSync(marker, { force: true })
    spawnSync('bash', ['-c', command], {
      cwd: root,
      env: { PATH: `${bin}:/usr/bin:/bin`, HOME: root },
      input: '',
      timeout: 10_000,
      stdio: ['pipe', 'ignore', 'ignore'],
    })
    return existsSync(marker) && readFileSync(marker, 'utf8').length > 0
  }

  const runsLango = [
    'lango cron list',
    'cd . && lango cron',
    'true || lango memory; false || lango memory',
    'l\\ango cron',
    "la''ngo cron",
    "$'\\x6cango' cron",
    '$HOME/bin/lango cron',
    './lango cron',
    'env -i PATH="$PATH" lango cron',
    'env -S "lango cron"',
    'nohup lango serve',
    'timeout -s KILL 5 lango cron',
    'nice -n 5 lango cron',
    'stdbuf -oL lango cron',
    'setsid -w lango serve',
    'exec -a foo lango cron',
    'command lango cron',
    'xargs -n 1 lango cron < ids',
    'find . -maxdepth 0 -exec lango cron {} \\;',
    "sh -c 'lango cron'",
    "bash -ec 'lango cron'",
    "sh -c '$0 cron' lango",
    "eval 'lango cron'",
    'L=lango; $L cron',
    '${X:-lango} cron',
    '$(echo lango) cron',
    'a=lan; b=go; $a$b cron',
    'X=LANGO; ${X,,} cron',
    'l{a,}ngo cron',
    'echo lango cron | sh',
    'bash <<< "lango cron"',
    'echo bGFuZ28gY3Jvbg== | base64 -d | sh',
    "printf '\\154\\141\\156\\147\\157 cron' | sh",
    'bash <(echo lango cron)',
    'bash ./lango cron',
    'echo "$(lango memory)"',
    'lango() { command lango "$@"; }; lango cron',
    'c="lango cron"; $c',
    'echo lango cron | xargs sh -c',
    'echo lango | xargs -I{} sh -c "{} cron"',
    "PS4='$(lango cron)'; set -x; :",
    "echo 'lango cron' > run.sh; sh run.sh",
    "echo 'lango cron' > run.sh && chmod +x run.sh && ./run.sh",
    'echo lango cron | tee x.sh >/dev/null; bash x.sh',
    'ln -s "$(command -v lango)" ./l && ./l cron',
    'hash -p "$HOME/bin/lango" x; x cron',
    'BASH_ENV=./lango bash -c :; true',
    ...JOINS_PRINTF_AND_NAMEREFS.map(([command]) => command),
    ...EXPANDED_THEN_REPARSED.map(([command]) => command),
  ]

  const doesNotRunLango = [
    'echo lango',
    'cat lango.yaml',
    'cat ./lango',
    'which lango',
    'command -v lango',
    'type lango',
    'grep lango lango.yaml',
    'echo hi > out; cat out',
    "echo '$(lango cron)'",
    'echo \\`lango\\`',
    'cat <<EOF\nlango cron\nEOF',
    "cat <<'EOF'\n$(lango cron)\nEOF",
    '# lango cron',
    'lango=1',
    'echo lango | cat',
    "sh -c 'echo lango'",
    "echo 'echo lango' | bash",
    'mylango 2>/dev/null; true',
    'c="lango cron"; "$c" 2>/dev/null; true',
    "echo 'lango cron' > notes.txt; cat notes.txt",
    '((lango cron)) 2>/dev/null; true',
    'a=(x y); IFS=,; echo "${a[*]}"',
    'a=(ls /usr/bin/lango); "${a[@]}"',
    'a=(lan go); c="${a[@]}"; $c 2>/dev/null; true',
    'args=(lan go); IFS=; ${args[*]} 2>/dev/null; true',
    'declare -n r=c; c=hello; echo $r',
    'a=(lan go); eval "${a[*]}" 2>/dev/null; true',
    'a=(lan go); IFS=,; eval "${a[*]}" 2>/dev/null; true',
    'sh -c "\\$1" lango',
    'set -- x; sh -c "echo \\$1" _ lango',
    'bash -c \'a=(lan go); IFS=; echo "${a[*]}"\'',
  ]

  it.each(runsLango)('bash really runs lango for the block case %s', (command) => {
    expect(classifyLangoExec(command).verdict).toBe('block')
    expect(run(command)).toBe(true)
  })

  it.each(doesNotRunLango)('bash does not run lango for the allow case %s', (command) => {
    if (!command.startsWith('((')) expect(classifyLangoExec(command)).toEqual({ verdict: 'allow' })
    expect(run(command)).toBe(false)
  })

  it.skipIf(!existsSync('/bin/dash'))('blocks ((…)), which dash runs as nested subshells', () => {
    rmSync(marker, { force: true })
    spawnSync('/bin/dash', ['-c', '((lango cron))'], { cwd: root, env: { PATH: `${bin}:/usr/bin:/bin` } })
    expect(existsSync(marker)).toBe(true)
    expect(classifyLangoExec('((lango cron))')).toMatchObject({ verdict: 'block', subcommand: 'cron' })
  })
})

/** Small deterministic PRNG (mulberry32) so property failures reproduce. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let mixed = state
    mixed = Math.imul(mixed ^ (mixed >>> 15), mixed | 1)
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61)
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296
  }
}
