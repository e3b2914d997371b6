/** A read of a {@link ByteRingBuffer} by absolute stream offset. */
export interface RingRead {
  /** The bytes from `offset` to `nextOffset`. */
  readonly data: Buffer
  /** Absolute offset of `data[0]`; larger than the requested offset when bytes were dropped. */
  readonly offset: number
  /** Pass this as the next read's offset to continue the stream without gaps or repeats. */
  readonly nextOffset: number
  /** Bytes between the requested offset and `offset` that the buffer no longer holds. */
  readonly droppedBytes: number
}

/**
 * A fixed-size byte ring addressed by absolute stream offsets. Writers append; readers ask for
 * "everything from offset N" and learn how much was overwritten before they got to it. JavaScript
 * runs one callback at a time, so a read never observes a half-applied write.
 */
export class ByteRingBuffer {
  readonly capacity: number
  readonly #storage: Buffer
  #written = 0

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity <= 0)
      throw new RangeError('capacity must be a positive integer')
    this.capacity = capacity
    this.#storage = Buffer.allocUnsafe(capacity)
  }

  /** Total bytes ever written: the offset the next byte will get. */
  get endOffset(): number {
    return this.#written
  }

  /** The oldest offset still held. */
  get startOffset(): number {
    return Math.max(0, this.#written - this.capacity)
  }

  /** Total bytes overwritten so far. */
  get droppedBytes(): number {
    return this.startOffset
  }

  write(chunk: Uint8Array): void {
    let source = chunk
    if (source.length > this.capacity) {
      // Only the last `capacity` bytes can survive; account for the rest as written-and-dropped.
      this.#written += source.length - this.capacity
      source = source.subarray(source.length - this.capacity)
    }
    const position = this.#written % this.capacity
    const firstPart = Math.min(source.length, this.capacity - position)
    this.#storage.set(source.subarray(0, firstPart), position)
    if (firstPart < source.length) this.#storage.set(source.subarray(firstPart), 0)
    this.#written += source.length
  }

  /** Copies out bytes from `offset` (clamped to what is held), at most `maxBytes`. */
  read(offset = 0, maxBytes = this.capacity): RingRead {
    const requested = Math.max(0, Math.floor(offset))
    const start = Math.min(Math.max(requested, this.startOffset), this.#written)
    const end = Math.min(this.#written, start + Math.max(0, maxBytes))
    const length = end - start
    const data = Buffer.allocUnsafe(length)
    if (length > 0) {
      const position = start % this.capacity
      const firstPart = Math.min(length, this.capacity - position)
      this.#storage.copy(data, 0, position, position + firstPart)
      if (firstPart < length) this.#storage.copy(data, firstPart, 0, length - firstPart)
    }
    return { data, offset: start, nextOffset: end, droppedBytes: Math.max(0, start - requested) }
  }
}

/**
 * Keeps the first `headBytes` and the last `tailBytes` of a stream and counts what fell in
 * between (SECURITY.md RES-3). Chunks are kept by reference, so capturing 100 MB copies almost
 * nothing.
 */
export class HeadTailCapture {
  readonly #headLimit: number
  readonly #tailLimit: number
  readonly #head: Buffer[] = []
  #headSize = 0
  readonly #tail: Buffer[] = []
  #tailSize = 0
  #total = 0

  constructor(maxBytes: number) {
    this.#headLimit = Math.floor(maxBytes / 2)
    this.#tailLimit = maxBytes - this.#headLimit
  }

  get droppedBytes(): number {
    return this.#total - this.#headSize - this.#tailSize
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length
    let rest = chunk
    if (this.#headSize < this.#headLimit) {
      const take = Math.min(rest.length, this.#headLimit - this.#headSize)
      this.#head.push(rest.subarray(0, take))
      this.#headSize += take
      rest = rest.subarray(take)
      if (rest.length === 0) return
    }
    if (this.#tailLimit === 0) return
    if (rest.length >= this.#tailLimit) {
      this.#tail.length = 0
      this.#tail.push(Buffer.from(rest.subarray(rest.length - this.#tailLimit)))
      this.#tailSize = this.#tailLimit
      return
    }
    this.#tail.push(rest)
    this.#tailSize += rest.length
    while (this.#tailSize > this.#tailLimit) {
      const first = this.#tail[0] as Buffer
      const excess = this.#tailSize - this.#tailLimit
      if (first.length <= excess) {
        this.#tail.shift()
        this.#tailSize -= first.length
      } else {
        this.#tail[0] = first.subarray(excess)
        this.#tailSize -= excess
      }
    }
  }

  /** The kept text; a marker stands where bytes were dropped. */
  text(): { text: string; truncated: boolean } {
    const head = Buffer.concat(this.#head, this.#headSize).toString('utf8')
    const dropped = this.droppedBytes
    if (this.#tailSize === 0) return { text: head, truncated: false }
    const tail = Buffer.concat(this.#tail, this.#tailSize).toString('utf8')
    if (dropped === 0)
      return { text: Buffer.concat([...this.#head, ...this.#tail]).toString('utf8'), truncated: false }
    return { text: `${head}\n[… ${dropped} bytes of output dropped …]\n${tail}`, truncated: true }
  }
}
