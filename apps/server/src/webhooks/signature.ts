import { createHmac, timingSafeEqual } from 'node:crypto'
import { MAX_MESSAGE_ID_CHARS, TIMESTAMP_TOLERANCE_MS } from './receipts.js'

/** The headers of a signed call (Standard Webhooks, https://www.standardwebhooks.com). */
export interface SignedCall {
  /** `webhook-id`: the message id, unique per message (retries of one message keep it). */
  readonly id: string | undefined
  /** `webhook-timestamp`: seconds since the epoch, when the sender signed the call. */
  readonly timestamp: string | undefined
  /** `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries (several while rotating). */
  readonly signature: string | undefined
}

/** Why a call does not verify; the route answers each 401 with the message. */
export type VerifyFailure =
  | { readonly kind: 'missing'; readonly message: string }
  | { readonly kind: 'stale'; readonly message: string }
  | { readonly kind: 'signature'; readonly message: string }

/** The signing key of a secret: a `whsec_<base64>` secret's decoded bytes, any other secret's UTF-8. */
function keyOf(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8')
}

/**
 * The `v1,<base64>` signature of `body` sent as message `id` at `timestamp` (seconds): HMAC-SHA256
 * over `<id>.<timestamp>.<body>` with the secret's key. What a sender computes; the tests sign with it.
 */
export function signWebhook(secret: string, id: string, timestamp: string, body: Uint8Array): string {
  const mac = createHmac('sha256', keyOf(secret))
  mac.update(`${id}.${timestamp}.`)
  mac.update(body)
  return `v1,${mac.digest('base64')}`
}

/**
 * The checks of a call that need neither its body nor its secret: the three headers present and
 * well formed, and the timestamp within 5 minutes of `now` (epoch ms) either way. Undefined when
 * they pass; a call failing them is refused before its body is read.
 */
export function checkWebhookHeaders(call: SignedCall, now: number): VerifyFailure | undefined {
  const { id, timestamp, signature } = call
  if (id === undefined || timestamp === undefined || signature === undefined) {
    return {
      kind: 'missing',
      message:
        'a hook call is signed: send webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks)',
    }
  }
  if (id.length === 0 || id.length > MAX_MESSAGE_ID_CHARS || !/^\d{1,15}$/.test(timestamp)) {
    return {
      kind: 'missing',
      message: `webhook-id is 1 to ${MAX_MESSAGE_ID_CHARS} characters and webhook-timestamp whole seconds since the epoch`,
    }
  }
  if (Math.abs(now - Number(timestamp) * 1000) > TIMESTAMP_TOLERANCE_MS) {
    return {
      kind: 'stale',
      message:
        'webhook-timestamp is more than 5 minutes from the server’s clock; sign the call when you send it',
    }
  }
  return undefined
}

/**
 * Verifies a call as Standard Webhooks does: {@link checkWebhookHeaders}, then one `v1` signature
 * in `webhook-signature` equal (in constant time) to the HMAC-SHA256 of
 * `<id>.<timestamp>.<raw body>` under `secret`. Returns undefined when it verifies.
 */
export function verifyWebhook(
  call: SignedCall,
  body: Uint8Array,
  secret: string,
  now: number,
): VerifyFailure | undefined {
  const headers = checkWebhookHeaders(call, now)
  if (headers !== undefined) return headers
  // Present: checked just above.
  const { id, timestamp, signature } = call as { id: string; timestamp: string; signature: string }
  const expected = Buffer.from(signWebhook(secret, id, timestamp, body).slice(3), 'base64')
  for (const entry of signature.split(' ')) {
    const comma = entry.indexOf(',')
    if (comma === -1 || entry.slice(0, comma) !== 'v1') continue
    const given = Buffer.from(entry.slice(comma + 1), 'base64')
    if (given.length === expected.length && timingSafeEqual(given, expected)) return undefined
  }
  return { kind: 'signature', message: 'the webhook signature does not verify' }
}
