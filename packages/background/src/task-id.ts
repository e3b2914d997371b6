import { randomInt } from 'node:crypto'

/** Distinct 5-character base-36 prefixes (36^5, about 60 million). */
const PREFIX_SPACE = 36 ** 5
/** A canonical decimal sequence number: no leading zero, at most 15 digits (a safe integer). */
const SEQUENCE = /^[1-9][0-9]{0,14}$/

/**
 * The built-in task ids: a random 5-character base-36 prefix chosen once per manager, a dash, then a
 * sequence number (`k3x9a-1`, `k3x9a-2`, …). Ids are unique within a manager and, with high
 * probability, across restarts; they are short enough to type in a chat. They are not secrets:
 * `list()` shows every id.
 *
 * Why this shape (ADR 0003): the manager keys its task map by the sequence number, a small integer,
 * and parses it back out of an id on lookup. V8 builds a concatenated string of 13 or more characters
 * as a rope, which costs more to make and use; these ids stay within 12 characters for the first
 * 999,999 tasks of a manager. Decimal because `toString(36)` takes V8's slow path.
 */
export class TaskIds {
  readonly #prefix = `${randomInt(PREFIX_SPACE).toString(36).padStart(5, '0')}-`
  #last = 0

  /** The next sequence number (1, 2, …). */
  nextSequence(): number {
    this.#last += 1
    return this.#last
  }

  /** The id of sequence number `sequence`. */
  format(sequence: number): string {
    return this.#prefix + String(sequence)
  }

  /** The sequence number in an id this generator made, or undefined for any other string. */
  parse(id: string): number | undefined {
    if (!id.startsWith(this.#prefix)) return undefined
    const digits = id.slice(this.#prefix.length)
    if (!SEQUENCE.test(digits)) return undefined
    const sequence = Number(digits)
    return sequence <= this.#last ? sequence : undefined
  }
}
