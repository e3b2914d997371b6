/** Network checks give up after this long: a doctor that hangs helps nobody. */
export const NETWORK_TIMEOUT_MS = 3000

/** A URL as shown: no user, password, query or fragment. */
export function shownUrl(text: string): string {
  try {
    const url = new URL(text)
    return `${url.origin}${url.pathname.replace(/\/+$/, '')}`
  } catch {
    return '(not a URL)'
  }
}

/** GET `url` as JSON within the network timeout: the status, and the body if it parses. */
export async function getJson(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(url, {
    headers: { accept: 'application/json', ...headers },
    signal: AbortSignal.timeout(NETWORK_TIMEOUT_MS),
  })
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, json }
}

/** Why a request got no answer: a timeout, or the first error code in its causes. */
export function networkProblem(error: unknown): string {
  if ((error as { name?: string } | null)?.name === 'TimeoutError')
    return `no answer within ${NETWORK_TIMEOUT_MS / 1000} s`
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { code, errors, cause } = current as { code?: unknown; errors?: unknown[]; cause?: unknown }
    if (typeof code === 'string') return code
    current = Array.isArray(errors) && errors.length > 0 ? errors[0] : cause
  }
  return 'unreachable'
}
