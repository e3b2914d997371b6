import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { recordingLogger, tempDir } from './__fixtures__/helpers.js'
import { ProcessRegistry } from './background.js'
import { checkSecretPlacement } from './index.js'
import { MemoryRefStore } from './memory-ref-store.js'
import { nodePtyDriver, runWithPty } from './pty/index.js'
import { run } from './run.js'

const CANARY = 'sk-canary-7f3a9c2e41'

let dir: { path: string; cleanup: () => Promise<void> }
let refStore: MemoryRefStore
beforeEach(async () => {
  dir = await tempDir()
  refStore = new MemoryRefStore({
    '{{secret:api-key}}': CANARY,
    '{{decrypt:uuid-123}}': 'decrypted-value-42',
  })
})
afterEach(async () => {
  await dir.cleanup()
})

describe('reference tokens in run (seed 001)', () => {
  it('replaces {{secret:…}} before execution, logs the original and masks the value in output', async () => {
    const logger = recordingLogger()
    const result = await run('printf "Auth: %s\\n" {{secret:api-key}} > auth.txt; cat auth.txt', {
      refStore,
      cwd: dir.path,
      logger,
    })
    // The child received the real value …
    expect(await readFile(join(dir.path, 'auth.txt'), 'utf8')).toBe(`Auth: ${CANARY}\n`)
    // … but nothing handed back or logged contains it.
    expect(result.stdout).toBe('Auth: [secret:api-key]\n')
    expect(result.command).toBe('printf "Auth: %s\\n" {{secret:api-key}} > auth.txt; cat auth.txt')
    expect(JSON.stringify(logger.lines)).toContain('{{secret:api-key}}')
    expect(JSON.stringify(logger.lines)).not.toContain(CANARY)
  })

  it('resolves {{decrypt:…}}', async () => {
    const result = await run('echo {{decrypt:uuid-123}} | wc -c', { refStore })
    expect(result.stdout.trim()).toBe(String('decrypted-value-42\n'.length))
  })

  it('passes an unknown token to the shell literally', async () => {
    const result = await run("echo '{{secret:unknown}}' {{secret:unknown}}", { refStore })
    expect(result.stdout).toBe('{{secret:unknown}} {{secret:unknown}}\n')
  })

  it('runs a command without tokens unchanged', async () => {
    const result = await run('echo "{{not a token}}" \'{{x}}\'', { refStore })
    expect(result.stdout).toBe('{{not a token}} {{x}}\n')
  })

  it('works inside double quotes, and a hostile value cannot change the command', async () => {
    const marker = join(dir.path, 'injected')
    refStore.set('{{secret:evil}}', `x"; touch ${marker}; echo "$(touch ${marker})`)
    const result = await run('printf "[%s]" "v={{secret:evil}}" > out.txt; echo {{secret:evil}} >> out.txt', {
      refStore,
      cwd: dir.path,
    })
    expect(result.exitCode).toBe(0)
    await expect(readFile(marker)).rejects.toThrow()
    const written = await readFile(join(dir.path, 'out.txt'), 'utf8')
    expect(written).toContain(`touch ${marker}`)
  })

  it('never puts the value on the command line (/proc/<pid>/cmdline)', async () => {
    const result = await run(
      'tr "\\0" " " < /proc/$$/cmdline; echo; test -n {{secret:api-key}} && echo set',
      {
        refStore,
      },
    )
    expect(result.stdout).toContain('__LANGO_REF_0')
    expect(result.stdout).toContain('set')
    expect(result.stdout).not.toContain(CANARY)
    expect(result.stdout).not.toContain('[secret:api-key]')
  })

  it('fails closed when a resolvable token sits in single quotes', async () => {
    await expect(run("echo '{{secret:api-key}}'", { refStore })).rejects.toMatchObject({
      code: 'EXEC_SECRET_IN_QUOTES',
    })
    await expect(run("echo $'{{secret:api-key}}'", { refStore })).rejects.toMatchObject({
      code: 'EXEC_SECRET_IN_QUOTES',
    })
  })

  it('checkSecretPlacement refuses, resolving nothing, exactly what a spawn refuses', async () => {
    const commands = [
      'echo {{secret:api-key}}',
      'curl -H "Authorization: Bearer {{secret:api-key}}" http://127.0.0.1:9',
      "curl -H 'Authorization: Bearer {{secret:api-key}}' http://127.0.0.1:9",
      "echo $'{{secret:api-key}}'",
      "cat <<'EOF'\n{{secret:api-key}}\nEOF",
      'sh -c "echo {{secret:api-key}}"',
      "echo '{{secretfile:api-key}}' # a file token is inert anywhere",
      'echo no tokens at all',
    ]
    for (const command of commands) {
      const spawned = await run(command, { refStore }).then(
        () => 'ran',
        (error: { code?: string }) => error.code,
      )
      let checked = 'ran'
      try {
        checkSecretPlacement(command)
      } catch (error) {
        checked = (error as { code?: string }).code ?? String(error)
      }
      expect({ command, checked }).toEqual({ command, checked: spawned })
    }
    expect(() => checkSecretPlacement("echo '{{secret:api-key}}'")).toThrow(/move it outside single quotes/)
  })

  it('masks common encodings of the value (SEC-4)', async () => {
    const command = [
      'v={{secret:api-key}}',
      'printf %s "$v" | base64',
      'printf %s "x$v" | base64',
      'printf %s "xy$v" | base64',
      'printf %s "$v" | od -An -tx1 | tr -d " \\n"; echo',
      'printf \'{"k":"%s"}\\n\' "$v"',
    ].join('; ')
    const result = await run(command, { refStore })
    const encodings = [
      CANARY,
      Buffer.from(CANARY).toString('base64'),
      Buffer.from(CANARY).toString('hex'),
      Buffer.from(`x${CANARY}`).toString('base64').slice(4, 16),
      Buffer.from(`xy${CANARY}`).toString('base64').slice(4, 16),
    ]
    for (const encoding of encodings) expect(result.stdout).not.toContain(encoding)
    expect(result.stdout).toContain('[secret:api-key]')
  })

  it('masks values held by the store even when the command never names the token', async () => {
    const result = await run(`echo ${CANARY}`, { refStore })
    expect(result.stdout).toBe('[secret:api-key]\n')
  })

  it('resolves tokens in env overrides into the child environment only', async () => {
    const result = await run('test "$OPENAI_API_KEY" = "$EXPECTED" && echo match; echo "$OPENAI_API_KEY"', {
      refStore,
      env: { OPENAI_API_KEY: '{{secret:api-key}}', EXPECTED: CANARY },
      envSource: 'trusted',
    })
    expect(result.stdout).toBe('match\n[secret:api-key]\n')
  })
})

describe('reference tokens in PTY and background modes (seed 001)', () => {
  it('resolves tokens in runWithPty identically', async () => {
    const result = await runWithPty('printf "%s" {{secret:api-key}} | wc -c; echo {{secret:unknown}}', {
      refStore,
      stripAnsi: true,
    })
    expect(result.stdout).toContain(String(CANARY.length))
    expect(result.stdout).toContain('{{secret:unknown}}')
    expect(result.stdout).not.toContain(CANARY)
  })

  it('resolves tokens in background processes; BackgroundProcess.command keeps the original', async () => {
    await using registry = new ProcessRegistry({ refStore, ptyDriver: nodePtyDriver() })
    for (const pty of [false, true]) {
      const process = await registry.start('echo {{secret:api-key}}; printf %s {{secret:api-key}} | wc -c', {
        pty,
      })
      expect(process.command).toBe('echo {{secret:api-key}}; printf %s {{secret:api-key}} | wc -c')
      await process.wait()
      const { output } = process.read(0)
      expect(output).toContain('[secret:api-key]')
      expect(output).toContain(String(CANARY.length))
      expect(output).not.toContain(CANARY)
      expect(JSON.stringify(process.snapshot())).not.toContain(CANARY)
    }
  })
})
