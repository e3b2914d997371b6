import { describe, expect, it } from 'vitest'
import { Redactor, stripAnsi } from './redact.js'

const SECRET = 'hunter2-canary-value'

describe('Redactor', () => {
  const redactor = new Redactor().add(SECRET, 'pw')

  it('masks the literal and its encodings', () => {
    const text = [
      SECRET,
      JSON.stringify({ v: SECRET }),
      encodeURIComponent(`a b ${SECRET}`),
      Buffer.from(SECRET).toString('base64'),
      Buffer.from(SECRET).toString('base64url'),
      Buffer.from(SECRET).toString('hex'),
      Buffer.from(SECRET).toString('hex').toUpperCase(),
      Buffer.from(`user:${SECRET}`).toString('base64'),
      Buffer.from(`u:${SECRET}`).toString('base64'),
    ].join('\n')
    const masked = redactor.redact(text)
    expect(masked).not.toContain(SECRET)
    expect(masked.split('\n').every((line) => line.includes('[secret:pw]'))).toBe(true)
    expect(masked.match(/\[secret:pw\]/g)?.length).toBeGreaterThanOrEqual(9)
  })

  it('masks a longer secret whole even when it contains a shorter one', () => {
    const nested = new Redactor().add('abcd1234', 'short').add('xx-abcd1234-yy', 'long')
    expect(nested.redact('v=xx-abcd1234-yy')).toBe('v=[secret:long]')
  })

  it('refuses values shorter than 8 characters', () => {
    expect(() => new Redactor().add('abcdefg', 'tiny')).toThrow(/shorter than 8/)
  })

  it('masks each line of a multi-line value (PEM keys)', () => {
    const pem = new Redactor().add('-----BEGIN KEY-----\nMIIEpAIBAAKCAQEA\n-----END KEY-----', 'key')
    expect(pem.redact('line: MIIEpAIBAAKCAQEA')).toBe('line: [secret:key]')
  })

  it('catches a secret split by ANSI escapes in terminal output', () => {
    const coloured = `\u001B[1m${SECRET.slice(0, 5)}\u001B[0m${SECRET.slice(5)}`
    expect(redactor.redact(coloured)).not.toContain(SECRET.slice(5))
    expect(stripAnsi('\u001B[31mred\u001B[0m\u001B]0;title\u0007')).toBe('red')
  })
})

describe('StreamRedactor', () => {
  it('catches a secret split across chunks at every position', () => {
    const redactor = new Redactor().add(SECRET, 'pw')
    const text = `before ${SECRET} after`
    for (let cut = 1; cut < text.length; cut++) {
      const stream = redactor.stream()
      const out = stream.push(text.slice(0, cut)) + stream.push(text.slice(cut)) + stream.flush()
      expect(out).toBe('before [secret:pw] after')
    }
  })

  it('releases text that cannot be the start of a secret at once (a prompt is visible)', () => {
    const stream = new Redactor().add(SECRET, 'pw').stream()
    expect(stream.push('name? ')).toBe('name? ')
    expect(stream.push('x hun')).toBe('x ')
    expect(stream.push('gry')).toBe('hungry')
  })
})

describe('StreamRedactor reads the stream as a terminal shows it (issue 11, finding 6)', () => {
  const redactor = new Redactor().add(SECRET, 'pw')

  it('catches a value split by an escape sequence, whatever the chunk boundary', () => {
    const text = `before ${SECRET.slice(0, 7)}\u001B[0;1m${SECRET.slice(7)} after`
    for (let cut = 1; cut < text.length; cut++) {
      const stream = redactor.stream()
      const out = stream.push(text.slice(0, cut)) + stream.push(text.slice(cut)) + stream.flush()
      expect(stripAnsi(out)).toBe('before [secret:pw] after')
      expect(out).toContain('\u001B[0;1m') // the terminal state change survives
    }
  })

  it('strips escapes split across chunks when asked, even with nothing to mask', () => {
    const text = '\u001B[31mred\u001B[0m \u001B]0;title\u0007plain'
    for (let cut = 1; cut < text.length; cut++) {
      const stream = new Redactor().stream({ stripAnsi: true })
      expect(stream.push(text.slice(0, cut)) + stream.push(text.slice(cut)) + stream.flush()).toBe(
        'red plain',
      )
    }
  })

  it('stays bounded, and still masks, when a prefix is padded with endless escapes', () => {
    const stream = redactor.stream()
    let out = stream.push(SECRET.slice(0, 9))
    for (let index = 0; index < 200; index++) out += stream.push('\u001B[0m'.repeat(1000))
    out += stream.push(`${SECRET.slice(9)}\n`) + stream.flush()
    expect(stripAnsi(out)).toBe('[secret:pw]\n')
    expect(out.length).toBeLessThan(50_000)
  })
})
