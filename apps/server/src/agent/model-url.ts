// Without the AI SDK: the HTTP layer shows the address too, and must not load `ai` at start.

/** Where the model server is, as it may be shown: scheme, host, port and path; no credentials or query. */
export function displayUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl)
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`
  } catch {
    return '(invalid URL)'
  }
}
