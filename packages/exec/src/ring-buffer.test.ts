import { describe, expect, it } from 'vitest'
import { ByteRingBuffer, HeadTailCapture } from './ring-buffer.js'

describe('ByteRingBuffer', () => {
  it('reads by absolute offset and reports what was overwritten', () => {
    const ring = new ByteRingBuffer(8)
    ring.write(Buffer.from('abcdef'))
    expect(ring.read(2).data.toString()).toBe('cdef')
    ring.write(Buffer.from('ghijk'))
    expect(ring.endOffset).toBe(11)
    expect(ring.startOffset).toBe(3)
    const read = ring.read(0)
    expect(read).toMatchObject({ offset: 3, nextOffset: 11, droppedBytes: 3 })
    expect(read.data.toString()).toBe('defghijk')
    expect(ring.read(11).data.length).toBe(0)
    expect(ring.read(5, 3).data.toString()).toBe('fgh')
  })

  it('keeps only the tail of a chunk larger than the ring', () => {
    const ring = new ByteRingBuffer(4)
    ring.write(Buffer.from('0123456789'))
    expect(ring.read(0)).toMatchObject({ offset: 6, droppedBytes: 6 })
    expect(ring.read(0).data.toString()).toBe('6789')
  })

  it('matches a reference model over random writes', () => {
    const ring = new ByteRingBuffer(97)
    let model = Buffer.alloc(0)
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed
    }
    for (let step = 0; step < 2000; step++) {
      const chunk = Buffer.alloc(random() % 150, String.fromCharCode(97 + (step % 26)))
      ring.write(chunk)
      model = Buffer.concat([model, chunk])
      const offset = random() % (model.length + 1)
      const read = ring.read(offset)
      const expectedStart = Math.max(offset, model.length - 97)
      expect(read.offset).toBe(expectedStart)
      expect(read.data.equals(model.subarray(expectedStart))).toBe(true)
    }
  })
})

describe('HeadTailCapture', () => {
  it('keeps head and tail and counts the dropped middle', () => {
    const capture = new HeadTailCapture(8)
    for (const part of ['abc', 'def', 'ghi', 'jkl']) capture.push(Buffer.from(part))
    expect(capture.droppedBytes).toBe(4)
    expect(capture.text()).toEqual({ text: 'abcd\n[… 4 bytes of output dropped …]\nijkl', truncated: true })
  })

  it('returns everything when it fits', () => {
    const capture = new HeadTailCapture(100)
    capture.push(Buffer.from('hello '))
    capture.push(Buffer.from('world'))
    expect(capture.text()).toEqual({ text: 'hello world', truncated: false })
  })
})
