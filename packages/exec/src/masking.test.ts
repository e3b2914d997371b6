import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import {
  ExecError,
  MemoryRefStore,
  ProcessRegistry,
  Redactor,
  type RefStore,
  run,
  stripAnsi,
} from './index.js'
import { nodePtyDriver, runWithPty } from './pty/index.js'

const SECRET = 'sk-canary-7f3a9c2e41'
const FIRST = SECRET.slice(0, 6)
const REST = SECRET.slice(6)

/** Runs `command` through each of the four spawners and returns what each handed back. */
async function everySpawner(command: string, refStore: RefStore): Promise<Record<string, string>> {
  const outputs: Record<string, string> = {}
  outputs.run = (await run(command, { refStore })).stdout
  outputs.runWithPty = (await runWithPty(command, { refStore })).stdout
  await using registry = new ProcessRegistry({ refStore, ptyDriver: nodePtyDriver() })
  for (const pty of [false, true]) {
    const process = await registry.start(command, { pty })
    await process.wait()
    outputs[pty ? 'background PTY' : 'background pipe'] = process.read(0).output
  }
  return outputs
}

const hasGrep = (() => {
  try {
    execFileSync('grep', ['--color=always', 'x'], { input: 'x\n', stdio: ['pipe', 'ignore', 'ignore'] })
    return true
  } catch {
    return false
  }
})()

describe('masking sees the text as a terminal shows it (issue 11, finding 6)', () => {
  const refStore = new MemoryRefStore({ '{{secret:k}}': SECRET })
  // Halves of the value, computed by the shell (dash has no ${v:0:6}).
  const halves = 'v={{secret:k}}; a=$(printf %s "$v" | cut -c1-6); b=$(printf %s "$v" | cut -c7-)'

  function expectMasked(outputs: Record<string, string>): void {
    for (const [spawner, output] of Object.entries(outputs)) {
      const shown = stripAnsi(output)
      expect(shown, spawner).toContain('[secret:k]')
      expect(shown, spawner).not.toContain(FIRST)
      expect(shown, spawner).not.toContain(REST)
    }
  }

  it.runIf(hasGrep)('grep --color=always highlighting part of the value', async () => {
    expectMasked(await everySpawner('printf "%s\\n" {{secret:k}} | grep --color=always canary', refStore))
  })

  it('a colour reset printed between two halves', async () => {
    expectMasked(await everySpawner(`${halves}; printf '%s\\033[0m%s\\n' "$a" "$b"`, refStore))
  })

  it('tput-style resets (ESC ( B ESC [ m) and cursor controls between the halves', async () => {
    expectMasked(await everySpawner(`${halves}; printf '%s\\033(B\\033[m\\033[K%s\\n' "$a" "$b"`, refStore))
  })

  it('halves written seconds apart, so they arrive in different chunks, with escapes between', async () => {
    const command = `${halves}; printf '%s\\033[1;31m' "$a"; sleep 0.3; printf '\\033[0m%s\\n' "$b"`
    expectMasked(await everySpawner(command, refStore))
  })

  it('a zero-width space, a NUL, or a backspaced character inside the value', async () => {
    const command = [
      halves,
      `printf '%s\\342\\200\\213%s\\n' "$a" "$b"`,
      `printf '%s\\000%s\\n' "$a" "$b"`,
      `printf '%sX\\b%s\\n' "$a" "$b"`,
    ].join('; ')
    expectMasked(await everySpawner(command, refStore))
  })

  it('keeps colours and text that are not part of a secret', async () => {
    const { stdout } = await run("printf '\\033[31mred\\033[0m plain %s\\n' {{secret:k}}", { refStore })
    expect(stdout).toBe('\u001b[31mred\u001b[0m plain [secret:k]\n')
  })
})

describe('secret minimum length (finding 11)', () => {
  it('MemoryRefStore refuses values shorter than 8 characters with a typed error', () => {
    for (const value of ['', 'abc', '4821', 'seven77']) {
      let caught: unknown
      try {
        new MemoryRefStore({ '{{secret:pin}}': value })
      } catch (error) {
        caught = error
      }
      expect(ExecError.is(caught)).toBe(true)
      expect(caught).toMatchObject({ code: 'EXEC_SECRET_TOO_SHORT', data: { name: 'pin', minLength: 8 } })
      expect((caught as Error).message).not.toContain(value || '\0')
    }
    expect(new MemoryRefStore({ '{{secret:ok}}': 'eight888' }).resolve('{{secret:ok}}')).toBe('eight888')
  })

  it('a short value from another store is refused before spawning', async () => {
    const store: RefStore = { resolve: (token) => (token === '{{secret:pin}}' ? '4821' : undefined) }
    await expect(run('echo {{secret:pin}}', { refStore: store })).rejects.toMatchObject({
      code: 'EXEC_SECRET_TOO_SHORT',
    })
  })

  it('masking never marks unrelated text for a short held value (seq -w 0 9999 reveals nothing)', async () => {
    const store: RefStore = {
      resolve: () => undefined,
      heldValues: () => [{ label: 'pin', value: '4821' }],
    }
    const { stdout } = await run('seq -w 0 9999', { refStore: store })
    expect(stdout).not.toContain('[secret:')
    expect(stdout.split('\n')[4821]).toBe('4821')
  })

  it('Redactor refuses short values too', () => {
    expect(() => new Redactor().add('4821', 'pin')).toThrow(
      expect.objectContaining({ code: 'EXEC_SECRET_TOO_SHORT' }),
    )
  })
})

describe('encoded forms that used to leak (finding 12)', () => {
  const long = 'ghp_9fQ2xL7vKc81mZtR4wYb0sNaE5uJd6HgPq3iVo2kTe7yWc4B' // 52 chars: base64 wraps, xxd -p wraps
  const refStore = new MemoryRefStore({
    '{{secret:long}}': long,
    '{{secret:phrase}}': 'correct horse (battery) staple!*',
  })

  it('base64 wrapped at 76 columns, and at other widths', async () => {
    const { stdout } = await run(
      'v={{secret:long}}; printf %s "$v$v" | base64; printf %s "x$v" | base64 -w 64; printf %s "$v" | base64 -w 20',
      { refStore },
    )
    const plain = stdout.replaceAll('\n', '')
    for (const form of [
      Buffer.from(long).toString('base64').slice(0, 40),
      Buffer.from(`x${long}`).toString('base64').slice(4, 40),
    ])
      expect(plain).not.toContain(form)
    expect(stdout).toContain('[secret:long]')
  })

  it('xxd -p of a value over 30 bytes (wrapped at 60 hex digits)', async () => {
    const { stdout } = await run(
      'printf %s {{secret:long}} | xxd -p; printf %s {{secret:long}} | xxd -p -u',
      {
        refStore,
      },
    )
    const plain = stdout.replaceAll('\n', '').toLowerCase()
    expect(plain).not.toContain(Buffer.from(long).toString('hex').slice(0, 40))
    expect(plain).not.toContain(Buffer.from(long).toString('hex').slice(-40))
  })

  it('URL quoting with + for spaces, strict RFC 3986 quoting, lower-case escapes', async () => {
    const phrase = 'correct horse (battery) staple!*'
    const forms = [
      encodeURIComponent(phrase).replaceAll('%20', '+'),
      encodeURIComponent(phrase).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`),
      encodeURIComponent(phrase).replace(/%[0-9A-F]{2}/g, (percent) => percent.toLowerCase()),
    ]
    const { stdout } = await run(forms.map((form) => `echo "q=${form}&x=1"`).join('; '), { refStore })
    expect(stdout).toBe('q=[secret:phrase]&x=1\n'.repeat(3))
  })
})

describe('a secret printed escaped or quoted by the program that prints it (outside probe)', () => {
  /** Runs `command` with the secret in `V` and gives back stdout and stderr together. */
  const printed = async (secret: string, command: string) => {
    const refStore = new MemoryRefStore({ '{{secret:s}}': secret })
    const result = await run(command, { refStore, env: { V: '{{secret:s}}' } })
    return `${result.stdout}${result.stderr}`
  }

  it('masks JSON with non-ASCII escaped (Python json.dumps, Go <>&), whatever the hex case', async () => {
    const secret = 'pässwörd-1234567<&>'
    const out = await printed(
      secret,
      `node -e 'const v = process.env.V; const ascii = (up) => JSON.stringify(v).replace(/[\\u0080-\\uffff]/g, (c) => "\\\\u" + (up ? c.charCodeAt(0).toString(16).toUpperCase() : c.charCodeAt(0).toString(16)).padStart(4, "0")); console.log(ascii(false)); console.log(ascii(true)); console.log(JSON.stringify(v).replace(/[<>&]/g, (c) => "\\\\u00" + c.charCodeAt(0).toString(16)))'`,
    )
    expect(out.split('\n').filter((line) => line !== '')).toEqual([
      '"[secret:s]"',
      '"[secret:s]"',
      '"[secret:s]"',
    ])
  })

  it("masks a shell's own quoting of it: bash's set -x trace, printf %q, dash's export -p", async () => {
    const secret = "it's-a-s3cret value"
    const out = await printed(
      secret,
      `bash -xc 'echo "$V" >/dev/null'; bash -c 'printf "%q\\n" "$V"'; dash -c 'export -p V'`,
    )
    expect(out).not.toContain('s3cret')
    expect(out.match(/\[secret:s\]/g)?.length).toBe(3)
    // printf %q's own rules: `,` always escaped, `~` and `#` only at the start.
    for (const secret of ['key,with,comma-12345', 'pass word~home123', '#pass word~12345'])
      expect(await printed(secret, `bash -c 'printf "%q\\n" "$V"'`), secret).toBe('[secret:s]\n')
  })
})
