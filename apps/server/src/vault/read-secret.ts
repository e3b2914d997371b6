import { createInterface } from 'node:readline'
import { Writable } from 'node:stream'
import { VaultError } from './errors.js'
import { MAX_SECRET_BYTES } from './vault.js'

/** Options of {@link readSecretValue}. */
export interface ReadSecretOptions {
  /** Where the value comes from (`process.stdin`). */
  readonly stdin: NodeJS.ReadableStream
  /** True when `stdin` is a terminal: the value is typed at a hidden prompt. */
  readonly isTTY: boolean
  /** The prompt shown on a terminal, e.g. `Value for API: `. */
  readonly prompt: string
  /** Where the prompt goes (default `process.stderr`); the typed value is never written to it. */
  readonly output?: NodeJS.WritableStream
  /** Largest value in UTF-8 bytes (default 64 KiB), without the stripped newline. */
  readonly maxBytes?: number
}

/**
 * Reads the value for `lango secrets set NAME`. Piped input is read to its end with one trailing
 * newline (`\n` or `\r\n`) removed, so `echo "$TOKEN" | lango secrets set API` stores `$TOKEN`
 * exactly. On a terminal the prompt goes to `output` and the typed value is not echoed.
 * @throws VaultError `VAULT_VALUE_TOO_LARGE`, `VAULT_INVALID_VALUE` (not UTF-8),
 * `VAULT_INPUT_CANCELED` (Ctrl-C or end of input at the prompt).
 */
export async function readSecretValue(options: ReadSecretOptions): Promise<string> {
  const maxBytes = options.maxBytes ?? MAX_SECRET_BYTES
  return options.isTTY
    ? readHidden(options.stdin, options.output ?? process.stderr, options.prompt, maxBytes)
    : readPiped(options.stdin, maxBytes)
}

function tooLarge(maxBytes: number): VaultError {
  return new VaultError('VAULT_VALUE_TOO_LARGE', `a secret value is at most ${maxBytes} bytes`, {
    data: { maxBytes },
  })
}

async function readPiped(stdin: NodeJS.ReadableStream, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = []
  let total = 0
  // Room for the one trailing `\r\n` that is stripped.
  const limit = maxBytes + 2
  for await (const chunk of stdin) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk)
    total += bytes.length
    if (total > limit) throw tooLarge(maxBytes)
    chunks.push(bytes)
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks))
  } catch (error) {
    throw new VaultError('VAULT_INVALID_VALUE', 'the secret value read from stdin is not UTF-8 text', {
      cause: error,
    })
  }
  const value = text.endsWith('\r\n') ? text.slice(0, -2) : text.endsWith('\n') ? text.slice(0, -1) : text
  if (Buffer.byteLength(value, 'utf8') > maxBytes) throw tooLarge(maxBytes)
  return value
}

function readHidden(
  stdin: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  prompt: string,
  maxBytes: number,
): Promise<string> {
  // readline echoes what is typed to its output: give it one that drops everything. The prompt is
  // written only once the interface holds the terminal (raw mode, no echo), so nothing typed early shows.
  const muted = new Writable({
    write(_chunk, _encoding, callback) {
      callback()
    },
  })
  const readline = createInterface({ input: stdin, output: muted, terminal: true, historySize: 0 })
  output.write(prompt)
  return new Promise<string>((resolve, reject) => {
    let received = 0
    const onData = (chunk: Buffer | string) => {
      received += typeof chunk === 'string' ? Buffer.byteLength(chunk, 'utf8') : chunk.length
      if (received > maxBytes + 2) finish(tooLarge(maxBytes))
    }
    const finish = (result: VaultError | string) => {
      stdin.removeListener('data', onData)
      stdin.removeListener('end', onEnd)
      readline.removeAllListeners()
      readline.close()
      output.write('\n')
      if (typeof result !== 'string') reject(result)
      else if (Buffer.byteLength(result, 'utf8') > maxBytes) reject(tooLarge(maxBytes))
      else resolve(result)
    }
    // At the end of input readline hands over an unfinished line; on a terminal only Enter confirms.
    let ended = false
    const onEnd = () => {
      ended = true
    }
    stdin.on('data', onData)
    stdin.prependListener('end', onEnd)
    readline.once('line', (line) =>
      finish(
        ended
          ? new VaultError('VAULT_INPUT_CANCELED', 'no secret value was entered (input ended before Enter)')
          : line,
      ),
    )
    readline.once('SIGINT', () =>
      finish(new VaultError('VAULT_INPUT_CANCELED', 'no secret value was entered (interrupted)')),
    )
    readline.once('close', () =>
      finish(
        new VaultError('VAULT_INPUT_CANCELED', 'no secret value was entered (input ended before Enter)'),
      ),
    )
  })
}
