import type { ModelMessage } from 'ai'
import * as v from 'valibot'
import { SessionError } from './errors.js'

/** Roles of AI SDK model messages. */
const ROLES = ['system', 'user', 'assistant', 'tool'] as const
type Role = (typeof ROLES)[number]

/** Deepest nesting accepted in a message (real messages stay under 10). */
const MAX_DEPTH = 64
/** Strings at or below this many characters are never shortened (ids, types, names). */
const MIN_TRUNCATED_LENGTH = 1024
/** Part types whose payload is binary (base64 text once encoded). */
const BINARY_PARTS: Readonly<Record<string, string>> = {
  image: 'image',
  file: 'data',
  media: 'data',
  'file-data': 'data',
  'image-data': 'data',
}

/** A message ready to store: its JSON, size and role. */
export interface EncodedMessage {
  readonly role: Role
  readonly json: string
  readonly bytes: number
  /** True when binary parts were omitted or long texts shortened to fit `maxMessageBytes`. */
  readonly shrunk: boolean
}

/** Estimated tokens of a text of `bytes` UTF-8 bytes (≈4 bytes a token, rounded up). */
export function estimateTokens(bytes: number): number {
  return Math.ceil(bytes / 4)
}

/** UTF-8 size of a string. */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}

/**
 * Validates a model message and encodes it as JSON of at most `maxBytes` UTF-8 bytes: bytes
 * (`Uint8Array`, `ArrayBuffer`) become base64 text; when too large, binary parts are replaced by
 * a text note (largest first), then the longest texts are shortened with a marker.
 * @throws SessionError `SESSION_INVALID_MESSAGE`, `SESSION_MESSAGE_TOO_LARGE`
 */
export function encodeMessage(message: unknown, index: number, maxBytes: number): EncodedMessage {
  const value = toJsonValue(message, index, 0)
  const role = checkShape(value, index)
  let json = JSON.stringify(value)
  let bytes = utf8Bytes(json)
  if (bytes <= maxBytes) return { role, json, bytes, shrunk: false }
  const container = { message: value }
  omitBinaryParts(container, maxBytes)
  json = JSON.stringify(container.message)
  bytes = utf8Bytes(json)
  if (bytes > maxBytes) {
    shortenTexts(container, maxBytes)
    json = JSON.stringify(container.message)
    bytes = utf8Bytes(json)
  }
  if (bytes > maxBytes) {
    throw new SessionError(
      'SESSION_MESSAGE_TOO_LARGE',
      `message ${index} is ${bytes} bytes after shrinking, above the limit of ${maxBytes}`,
      { data: { index, bytes, maxBytes } },
    )
  }
  return { role, json, bytes, shrunk: true }
}

const storedMessageSchema = v.looseObject({
  role: v.picklist(ROLES),
  content: v.union([v.string(), v.array(v.looseObject({ type: v.string() }))]),
})

/**
 * Parses a stored message.
 * @throws SessionError `SESSION_STORE_CORRUPT`
 */
export function decodeMessage(json: string, sessionKey: string, seq: number): ModelMessage {
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch (error) {
    throw corrupt(sessionKey, seq, 'is not JSON', error)
  }
  const result = v.safeParse(storedMessageSchema, parsed)
  if (!result.success) throw corrupt(sessionKey, seq, 'is not a model message')
  if (result.output.role === 'tool' && typeof result.output.content === 'string') {
    throw corrupt(sessionKey, seq, 'is a tool message without parts')
  }
  return result.output as unknown as ModelMessage
}

function corrupt(sessionKey: string, seq: number, what: string, cause?: unknown): SessionError {
  return new SessionError('SESSION_STORE_CORRUPT', `stored message ${seq} of a session ${what}`, {
    cause,
    data: { sessionKey, seq },
  })
}

/** Deep copy as plain JSON data; bytes become base64, `URL`s their text. */
function toJsonValue(value: unknown, index: number, depth: number): unknown {
  if (depth > MAX_DEPTH) throw invalid(index, `nests deeper than ${MAX_DEPTH} levels`)
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(index, 'holds a non-finite number')
    return value
  }
  if (typeof value !== 'object') throw invalid(index, `holds a ${typeof value}, which JSON cannot carry`)
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')
  if (value instanceof ArrayBuffer) return Buffer.from(value).toString('base64')
  if (value instanceof URL) return value.href
  if (Array.isArray(value))
    return value.map((item) => (item === undefined ? null : toJsonValue(item, index, depth + 1)))
  const prototype = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== null) throw invalid(index, 'holds a non-plain object')
  const copy: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined) continue
    copy[key] = toJsonValue(item, index, depth + 1)
  }
  return copy
}

function checkShape(value: unknown, index: number): Role {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(index, 'is not an object')
  const { role, content } = value as { role?: unknown; content?: unknown }
  if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
    throw invalid(index, 'has no role of system, user, assistant or tool')
  }
  if (typeof content === 'string') {
    if (role === 'tool') throw invalid(index, 'is a tool message whose content is not an array of parts')
    return role as Role
  }
  if (role === 'system' || !Array.isArray(content))
    throw invalid(index, 'has content that is neither text nor parts')
  for (const part of content) {
    if (typeof part !== 'object' || part === null || typeof (part as { type?: unknown }).type !== 'string') {
      throw invalid(index, 'has a content part without a type')
    }
  }
  return role as Role
}

function invalid(index: number, what: string): SessionError {
  return new SessionError('SESSION_INVALID_MESSAGE', `message ${index} ${what}`, { data: { index } })
}

type JsonObject = Record<string, unknown>

/** Every object in a JSON tree with its parent slot, so it can be replaced. */
function* objectSlots(
  parent: JsonObject | unknown[],
  key: string | number,
): Generator<{ parent: JsonObject | unknown[]; key: string | number; value: JsonObject }> {
  const value = (parent as Record<string | number, unknown>)[key]
  if (typeof value !== 'object' || value === null) return
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) yield* objectSlots(value, index)
    return
  }
  yield { parent, key, value: value as JsonObject }
  for (const child of Object.keys(value)) yield* objectSlots(value as JsonObject, child)
}

/** Replaces binary parts with a short text note, largest first, until the message fits. */
function omitBinaryParts(container: { message: unknown }, maxBytes: number): void {
  const binary = [...objectSlots(container, 'message')]
    .filter(({ value }) => {
      const field = typeof value.type === 'string' ? BINARY_PARTS[value.type] : undefined
      return field !== undefined && typeof value[field] === 'string'
    })
    .map((slot) => ({
      ...slot,
      size: (slot.value[BINARY_PARTS[slot.value.type as string] as string] as string).length,
    }))
    .sort((left, right) => right.size - left.size)
  for (const { parent, key, value, size } of binary) {
    if (utf8Bytes(JSON.stringify(container.message)) <= maxBytes) return
    const mediaType = typeof value.mediaType === 'string' ? ` ${value.mediaType.slice(0, 100)}` : ''
    ;(parent as Record<string | number, unknown>)[key] = {
      type: 'text',
      text: `[${value.type as string}${mediaType} omitted: ${size} characters of base64 over the session's message limit]`,
    }
  }
}

/** Shortens the longest strings (over 1024 characters), keeping their start, until the message fits. */
function shortenTexts(container: { message: unknown }, maxBytes: number): void {
  for (let round = 0; round < 1000; round += 1) {
    const excess = utf8Bytes(JSON.stringify(container.message)) - maxBytes
    if (excess <= 0) return
    let longest: { parent: JsonObject | unknown[]; key: string | number; length: number } | undefined
    const visit = (parent: JsonObject | unknown[], key: string | number): void => {
      const value = (parent as Record<string | number, unknown>)[key]
      if (typeof value === 'string') {
        if (value.length > MIN_TRUNCATED_LENGTH && (longest === undefined || value.length > longest.length)) {
          longest = { parent, key, length: value.length }
        }
      } else if (Array.isArray(value)) {
        for (let index = 0; index < value.length; index += 1) visit(value, index)
      } else if (typeof value === 'object' && value !== null) {
        for (const child of Object.keys(value)) visit(value as JsonObject, child)
      }
    }
    visit(container, 'message')
    if (longest === undefined) return
    const text = (longest.parent as Record<string | number, string>)[longest.key] as string
    // Each removed character removes at least one byte of JSON; the marker costs about 40.
    const keep = Math.max(MIN_TRUNCATED_LENGTH, text.length - excess - 64)
    let head = text.slice(0, keep)
    const last = head.charCodeAt(head.length - 1)
    if (last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1)
    ;(longest.parent as Record<string | number, unknown>)[longest.key] =
      `${head}\n[… ${text.length - head.length} characters truncated]`
  }
}

/** The ids a message opens (tool calls, approval requests) and closes (their results and responses). */
function pairing(message: ModelMessage): { opens: string[]; closes: string[] } {
  const opens: string[] = []
  const closes: string[] = []
  if (typeof message.content === 'string') return { opens, closes }
  for (const part of message.content as readonly {
    type: string
    toolCallId?: unknown
    approvalId?: unknown
  }[]) {
    if (part.type === 'tool-call' && typeof part.toolCallId === 'string')
      opens.push(`call:${part.toolCallId}`)
    else if (part.type === 'tool-result' && typeof part.toolCallId === 'string')
      closes.push(`call:${part.toolCallId}`)
    else if (part.type === 'tool-approval-request' && typeof part.approvalId === 'string')
      opens.push(`approval:${part.approvalId}`)
    else if (part.type === 'tool-approval-response' && typeof part.approvalId === 'string')
      closes.push(`approval:${part.approvalId}`)
  }
  return { opens, closes }
}

/**
 * Which cut positions keep tool calls with their results. `result[k]` is true when the first `k`
 * messages can be taken (observed or dropped) while `messages[k…]` stay: `messages[k]` is not a
 * `tool` message, and no tool call or approval request before `k` is answered at or after `k`.
 * A call never answered (an interrupted turn) does not block. Index 0 and `length` are always true.
 */
export function cutPoints(messages: readonly ModelMessage[]): boolean[] {
  const count = messages.length
  const allowed = Array.from(
    { length: count + 1 },
    (_, k) => k === 0 || k === count || messages[k]?.role !== 'tool',
  )
  const openedAt = new Map<string, number>()
  // blocked[k] counts open pairs spanning cut k (difference array).
  const delta = new Array<number>(count + 2).fill(0)
  messages.forEach((message, index) => {
    const { opens, closes } = pairing(message)
    for (const id of closes) {
      const opened = openedAt.get(id)
      if (opened !== undefined && opened < index) {
        delta[opened + 1] = (delta[opened + 1] ?? 0) + 1
        delta[index + 1] = (delta[index + 1] ?? 0) - 1
        openedAt.delete(id)
      }
    }
    for (const id of opens) openedAt.set(id, index)
  })
  let spanning = 0
  for (let k = 0; k <= count; k += 1) {
    spanning += delta[k] ?? 0
    if (spanning > 0 && k !== 0 && k !== count) allowed[k] = false
  }
  return allowed
}

/**
 * Where to cut `messages` to take about `desired` (1 ≤ desired ≤ length) of the oldest: the start
 * of a turn (a user message) at or below `desired` but not below half of it, so kept history
 * begins where the person spoke; else the largest allowed cut at or below `desired`; else the
 * smallest allowed cut above it. `undefined` when there is none.
 */
export function chooseCut(messages: readonly ModelMessage[], desired: number): number | undefined {
  const allowed = cutPoints(messages)
  for (let k = desired; k >= Math.max(1, Math.ceil(desired / 2)); k -= 1) {
    if (allowed[k] && messages[k]?.role === 'user') return k
  }
  for (let k = desired; k >= 1; k -= 1) if (allowed[k]) return k
  for (let k = desired + 1; k < allowed.length; k += 1) if (allowed[k]) return k
  return undefined
}
