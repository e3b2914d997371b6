// @ts-check
/**
 * The dashboard's calls to the server's public API, with the API token (kept in this tab's
 * sessionStorage) as a bearer header.
 */

/** The server refused the API token, or needs one: the page asks for it again. */
export class AuthError extends Error {}

const TOKEN_KEY = 'lango.apiToken'

let token = sessionStorage.getItem(TOKEN_KEY) || ''

/** Whether the page holds an API token. */
export function hasToken() {
  return Boolean(token)
}

/** Keeps the token for this tab. */
export function saveToken(value) {
  token = value
  sessionStorage.setItem(TOKEN_KEY, token)
}

/** Drops the token. */
export function forgetToken() {
  token = ''
  sessionStorage.removeItem(TOKEN_KEY)
}

/** @returns {Record<string, string>} */
export function authHeaders() {
  return token ? { authorization: `Bearer ${token}` } : {}
}

/** The event ids of the reads answered since {@link markReads}, or null when nobody asked. @type {string[] | null} */
let reads = null

/**
 * Starts collecting where the next reads stand in the event stream (`x-lango-event-id` of each
 * answer); returns the list they are added to, until the next call.
 * @returns {string[]}
 */
export function markReads() {
  const ids = /** @type {string[]} */ ([])
  reads = ids
  return ids
}

export async function api(path, init) {
  const options = init || {}
  const headers = Object.assign({ accept: 'application/json' }, authHeaders())
  let body
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(options.json)
  }
  const sent = token
  const response = await fetch(path, {
    method: options.method || (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
    cache: 'no-store',
  })
  if (response.status === 401)
    throw new AuthError(sent ? 'The server refused this token.' : 'This server needs its API token.')
  const eventId = response.headers.get('x-lango-event-id')
  if (reads !== null && eventId !== null) reads.push(eventId)
  const data = await response.json().catch(() => null)
  if (!response.ok && !(options.accept || []).includes(response.status)) {
    const message = data?.error?.message ? data.error.message : `HTTP ${response.status}`
    throw new Error(message)
  }
  return data
}

export function post(path, json) {
  return api(path, { method: 'POST', json: json === undefined ? {} : json })
}

/**
 * Downloads a file the API serves (`GET`, with the token, which a plain link could not send): read
 * as a blob, then saved under the name its `content-disposition` gives (else `fallbackName`).
 * @param {string} path
 * @param {string} fallbackName
 * @returns {Promise<{ name: string, bytes: number }>}
 */
export async function download(path, fallbackName) {
  const sent = token
  const response = await fetch(path, { headers: authHeaders(), cache: 'no-store' })
  if (response.status === 401)
    throw new AuthError(sent ? 'The server refused this token.' : 'This server needs its API token.')
  if (!response.ok) {
    const data = await response.json().catch(() => null)
    throw new Error(data?.error?.message ? data.error.message : `HTTP ${response.status}`)
  }
  const disposition = response.headers.get('content-disposition') || ''
  const named = /filename="([^"]+)"/.exec(disposition)
  const name = named ? named[1] : fallbackName
  const blob = await response.blob()
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = name
  link.hidden = true
  document.body.append(link)
  link.click()
  link.remove()
  // The browser has taken the blob once the click is handled; the URL is not needed after.
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
  return { name, bytes: blob.size }
}
