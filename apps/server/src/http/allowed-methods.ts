import type { Hono } from 'hono'
import { METHOD_NAME_ALL } from 'hono/router'
import { TrieRouter } from 'hono/router/trie-router'

/** The methods an `Allow` header lists, in this order. */
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/**
 * The methods the routes of `http` answer on a path, for a 405's `Allow` header (RFC 9110 §15.5.6):
 * `GET` brings `HEAD` (Hono answers it with the `GET` route), middleware (`use`, method `ALL`) is not
 * a route. Read from `http.routes` when first asked, so call it after every route is registered; an
 * empty list means no route has the path (a 404).
 */
export function allowedMethods(http: Hono): (path: string) => readonly string[] {
  let router: TrieRouter<string> | undefined
  const build = (): TrieRouter<string> => {
    const built = new TrieRouter<string>()
    for (const route of http.routes)
      if (route.method !== METHOD_NAME_ALL) built.add(route.method, route.path, route.method)
    return built
  }
  return (path) => {
    router ??= build()
    const found = new Set<string>()
    for (const method of ORDER) {
      const [matched] = router.match(method, path)
      if (matched.some(([routeMethod]) => routeMethod === method)) found.add(method)
    }
    if (found.has('GET')) found.add('HEAD')
    return ORDER.filter((method) => found.has(method))
  }
}
