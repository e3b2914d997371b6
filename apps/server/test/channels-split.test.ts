import { describe, expect, it } from 'vitest'
import { splitMessage } from '../src/channels/index.js'

/** A small seeded generator (mulberry32), so a failing case can be replayed from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = [
  'alpha',
  'beta',
  'x',
  'déjà',
  '😀',
  '`inline`',
  '```',
  '~~~',
  'a\tb',
  'wörd',
  '—',
  'z'.repeat(12),
]
const OPENERS = ['```', '```python', '```ts', '~~~', '````md', '  ```js title="x"', '~~~~ yaml']

interface Fence {
  readonly opener: string
  readonly marker: string
  readonly length: number
}

/** The test's own reading of fences (CommonMark's rules for backtick and tilde fences). */
function nextFence(open: Fence | undefined, line: string): Fence | undefined {
  const match = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line)
  if (open === undefined) {
    if (match === null) return undefined
    const [, run = '', info = ''] = match
    if (run.startsWith('`') && info.includes('`')) return undefined
    return { opener: line, marker: run.charAt(0), length: run.length }
  }
  if (match !== null) {
    const [, run = '', info = ''] = match
    if (run.startsWith(open.marker) && run.length >= open.length && info.trim() === '') return undefined
  }
  return open
}

/** The fence open for the text after `end`. */
function fenceAt(text: string, end: number): Fence | undefined {
  let open: Fence | undefined
  let position = 0
  for (;;) {
    const newline = text.indexOf('\n', position)
    const lineEnd = newline === -1 ? text.length : newline
    // A line cut at `end` counts whole (its rest is no line of its own); one starting there not at all.
    if (lineEnd > end && position >= end) return open
    open = nextFence(open, text.slice(position, lineEnd))
    if (newline === -1 || lineEnd > end) return open
    position = newline + 1
  }
}

/** The fence left open at the end of `part` read on its own. */
function openAtEnd(part: string): Fence | undefined {
  let open: Fence | undefined
  for (const line of part.split('\n')) open = nextFence(open, line)
  return open
}

function words(next: () => number, count: number): string {
  return Array.from({ length: count }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ')
}

/** Paragraphs of random lines (some longer than a message) and fenced blocks, some with blank lines. */
function randomText(next: () => number, blocks: number): string {
  const out: string[] = []
  for (let block = 0; block < blocks; block++) {
    if (next() < 0.35) {
      const opener = OPENERS[Math.floor(next() * OPENERS.length)] as string
      const fence = nextFence(undefined, opener) as Fence
      const lines = Array.from({ length: 1 + Math.floor(next() * 30) }, () =>
        next() < 0.15
          ? ''
          : `${'  '.repeat(Math.floor(next() * 3))}${words(next, 1 + Math.floor(next() * 12))}`,
      )
      // Unclosed only as the last block, as a text may end inside a fence.
      const closed = block < blocks - 1 || next() < 0.8
      const close = fence.marker.repeat(fence.length + (next() < 0.2 ? 1 : 0))
      out.push([opener, ...lines, ...(closed ? [close] : [])].join('\n'))
    } else {
      // A line may start like a fence and not be one (a backtick in its info string); such a line
      // longer than a message cannot be cut without its first piece reading as a fence, so those stay short.
      const lines = Array.from({ length: 1 + Math.floor(next() * 8) }, () => {
        const line = words(next, next() < 0.1 ? 60 + Math.floor(next() * 200) : 1 + Math.floor(next() * 20))
        return /^(?:```|~~~)/.test(line) && line.length > 15 ? `w ${line}` : line
      })
      out.push(lines.join('\n'))
    }
    out.push(['\n', '\n\n', '\n\n\n', '\n \n'][Math.floor(next() * 4)] as string)
  }
  return out.join('').trimEnd()
}

/**
 * Checks one split: every part within the limit and not blank; every part but the last closes the
 * fences it opens (when the text's fences are short enough to carry); the parts, less the fence lines
 * the split added, are the text in order, only whitespace dropped at the cuts.
 */
function checkSplit(text: string, limit: number, parts: readonly string[], label: string): boolean {
  const carries = openers(text).every(
    (fence) => fence.opener.length + fence.length + 2 <= Math.floor(limit / 2),
  )
  let position = 0
  let reopen: Fence | undefined
  parts.forEach((part, index) => {
    const where = `${label}, part ${index + 1} of ${parts.length}`
    expect(part.length, where).toBeLessThanOrEqual(limit)
    expect(part.trim(), where).not.toBe('')
    if (carries && index < parts.length - 1) expect(openAtEnd(part), where).toBeUndefined()
    let body = part
    if (reopen !== undefined) {
      expect(body.startsWith(`${reopen.opener}\n`), `${where} reopens ${reopen.opener}`).toBe(true)
      body = body.slice(reopen.opener.length + 1)
    }
    // A part that ends inside a fence carries a closing line the split added.
    const added = /\n(`{3,}|~{3,})$/.exec(body)
    const inner = added === null ? undefined : body.slice(0, body.length - added[0].length)
    const matches = (at: number): boolean =>
      text.startsWith(body, at) || (inner !== undefined && text.startsWith(inner, at))
    // Whitespace dropped at the cut may sit before this part.
    while (position < text.length && !matches(position) && /\s/.test(text.charAt(position))) position += 1
    // A closing line at the end is the split's when the text is still inside that (carried) fence
    // after the rest of the part, and the text does not close it there itself.
    const openAfterInner =
      inner !== undefined && text.startsWith(inner, position)
        ? fenceAt(text, position + inner.length)
        : undefined
    const splitClosed =
      openAfterInner !== undefined &&
      fits(openAfterInner, limit) &&
      openAfterInner.marker.repeat(openAfterInner.length) === added?.[1] &&
      !(
        text.startsWith(body, position) &&
        /^\n|^$/.test(text.slice(position + body.length, position + body.length + 1)) &&
        fenceAt(text, position + body.length) === undefined
      )
    const whole = !splitClosed && text.startsWith(body, position)
    if (whole) {
      position += body.length
      reopen = undefined
      // A part that ends inside a fence it carries must close it: only the last may stay open.
      if (carries && index < parts.length - 1)
        expect(fenceAt(text, position), `${where} ends inside a fence`).toBeUndefined()
      return
    }
    expect(
      inner !== undefined && text.startsWith(inner, position),
      `${where} does not match the text at ${position}`,
    ).toBe(true)
    position += inner?.length ?? 0
    reopen = fenceAt(text, position)
    expect(reopen, `${where} closed a fence the text has not open`).toBeDefined()
    expect(added?.[1], where).toBe(reopen?.marker.repeat(reopen.length))
  })
  expect(text.slice(position).trim(), `${label}: text left over`).toBe('')
  return carries
}

/** True when the split carries `fence` across parts at this limit (its two lines take half of it at most). */
function fits(fence: Fence, limit: number): boolean {
  return fence.opener.length + fence.length + 2 <= Math.floor(limit / 2)
}

/** Every fence the text opens. */
function openers(text: string): Fence[] {
  const found: Fence[] = []
  let open: Fence | undefined
  for (const line of text.split('\n')) {
    const next = nextFence(open, line)
    if (open === undefined && next !== undefined) found.push(next)
    open = next
  }
  return found
}

describe('splitMessage: properties over random texts', () => {
  const cases: { seed: number; limit: number; blocks: number }[] = []
  const limits = [20, 44, 64, 100, 257, 2000, 4096]
  for (let seed = 1; seed <= 500; seed++) {
    const limit = limits[seed % limits.length] as number
    cases.push({ seed, limit, blocks: 1 + (limit >= 2000 ? 10 + (seed % 40) : seed % 12) })
  }

  it('every part fits, fences are balanced per part, nothing but whitespace and added fence lines differs', () => {
    let split = 0
    let balanced = 0
    for (const { seed, limit, blocks } of cases) {
      const text = randomText(random(seed), blocks)
      const parts = splitMessage(text, limit)
      if (parts.length > 1) split += 1
      if (checkSplit(text, limit, parts, `seed ${seed}, limit ${limit}`) && parts.length > 1) balanced += 1
    }
    // The cases must exercise splitting, not only texts that fit.
    expect(split).toBeGreaterThan(cases.length / 2)
    expect(balanced).toBeGreaterThan(cases.length / 4)
  })

  it('the checker itself fails on a part that leaves a fence open', () => {
    const text = `intro\n\n\`\`\`python\n${'print(1)\n'.repeat(30)}\`\`\``
    const naive = [text.slice(0, 120), text.slice(120)]
    expect(() => checkSplit(text, 200, naive, 'naive')).toThrow()
  })
})

describe('splitMessage: where it cuts', () => {
  it('prefers a paragraph boundary to a later line boundary', () => {
    const first = Array.from({ length: 12 }, () => 'p'.repeat(99)).join('\n')
    const second = Array.from({ length: 12 }, () => 'q'.repeat(99)).join('\n')
    const parts = splitMessage(`${first}\n\n${second}`, 2000)
    expect(parts).toEqual([first, second])
  })

  it('cuts before a code block rather than inside it, when the part is at least half full', () => {
    const prose = Array.from({ length: 12 }, () => 'p'.repeat(99)).join('\n')
    const code = `\`\`\`ts\n${Array.from({ length: 8 }, (_, index) => `const v${index} = ${index}`).join('\n')}\n\`\`\``
    const parts = splitMessage(`${prose}\n${code}\nafter`, 1300)
    expect(parts).toEqual([prose, `${code}\nafter`])
  })

  it('closes a fence at the end of a part and reopens it with its info string', () => {
    const lines = Array.from(
      { length: 80 },
      (_, index) => `print(${String(index).padStart(2, '0')}) # ${'c'.repeat(50)}`,
    )
    const text = `Result:\n\`\`\`python\n${lines.join('\n')}\n\`\`\`\nDone.`
    const parts = splitMessage(text, 2000)
    expect(parts.length).toBe(3)
    expect(parts[0]?.startsWith('Result:\n```python\nprint(00)')).toBe(true)
    expect(parts[0]?.endsWith('\n```')).toBe(true)
    expect(parts[1]?.startsWith('```python\nprint(')).toBe(true)
    expect(parts[1]?.endsWith('\n```')).toBe(true)
    expect(parts[2]?.startsWith('```python\nprint(')).toBe(true)
    expect(parts[2]?.endsWith('```\nDone.')).toBe(true)
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(2000)
    const code = parts
      .map((part) => part.replace(/^Result:\n/, '').replace(/\nDone\.$/, ''))
      .flatMap((part) => part.split('\n').slice(1, -1))
    expect(code).toEqual(lines)
  })

  it('keeps a longer fence, and a closing run inside it that is too short, as written', () => {
    const inner = Array.from({ length: 40 }, () => 'x'.repeat(40))
    const text = `\`\`\`\`md\n\`\`\`\n${inner.join('\n')}\n\`\`\`\n\`\`\`\``
    const parts = splitMessage(text, 1000)
    expect(parts.length).toBeGreaterThan(1)
    for (const part of parts.slice(0, -1)) expect(part.endsWith('\n````')).toBe(true)
    for (const part of parts.slice(1)) expect(part.startsWith('````md\n')).toBe(true)
  })

  it('a hard cut leaves no fence-looking start in the next part', () => {
    const text = `${'a'.repeat(95)} \`\`\`python ${'b'.repeat(50)}`
    const parts = splitMessage(text, 100)
    expect(parts.join('')).toBe(text)
    for (const part of parts) expect(part).not.toMatch(/^ {0,3}```/)
  })
})
