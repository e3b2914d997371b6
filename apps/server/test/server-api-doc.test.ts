import { readdir, readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { inspectRoutes } from 'hono/dev'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SERVER_EVENTS } from '../src/events.js'
import { createHttpApp } from '../src/http/app.js'
import { ERROR_STATUS } from '../src/http/error-status.js'
import { STREAM_EVENTS } from '../src/http/routes/events.js'
import { startTestServer, type TestServer } from './fixtures/http-server.js'

// Issue 24, item 8: docs/server-api.md names every route and event, and nothing that is gone.

const DOC = fileURLToPath(new URL('../../../docs/server-api.md', import.meta.url))
const SOURCE = fileURLToPath(new URL('../src/', import.meta.url))

/** The codes the doc says reach the API only as a `TOOL_FAILED`'s `reason`. */
const REASON_ONLY = /^(EXEC|CRON|WORKFLOW|BACKGROUND|CHANNEL|CONFIG|SESSION|VAULT|CLI)_/

/** `METHOD /path` of each `### \`METHOD /path\`` heading. */
function documentedRoutes(markdown: string): string[] {
  return [...markdown.matchAll(/^### `([A-Z]+ \/[^`]*)`$/gm)].map((match) => match[1] as string)
}

/**
 * A documented route as a pattern over registered ones: `:param` as Hono spells it (a `{regex}`
 * suffix dropped), `<name>` any one path segment's text.
 */
function routePattern(route: string): RegExp {
  const escaped = route.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/<[a-z-]+>/g, '[^/]+')
  return new RegExp(`^${escaped}$`)
}

/** The registered route as the doc spells it: `GET /v1/models/:id{.+}` → `GET /v1/models/:id`. */
function normalise(method: string, path: string): string {
  return `${method} ${path.replace(/(:[A-Za-z_]+)\{[^}]*\}/g, '$1')}`
}

/** The `| \`name\` | data |` rows of the `## Events` section, by event name. */
function documentedEvents(markdown: string): Map<string, string> {
  const section = markdown.split(/^## Events$/m)[1]?.split(/^## /m)[0] ?? ''
  const rows = new Map<string, string>()
  for (const match of section.matchAll(/^\| `([a-z.]+)`\s*\|(.*)\|\s*$/gm)) {
    rows.set(match[1] as string, match[2] as string)
  }
  return rows
}

/** The `| \`CODE\` | status |` rows of the `## Errors` section. */
function documentedErrors(markdown: string): Map<string, number> {
  const section = markdown.split(/^## Errors$/m)[1]?.split(/^## /m)[0] ?? ''
  return new Map(
    [...section.matchAll(/^\| `([A-Z_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map(
      (match) => [match[1] as string, Number(match[2])] as const,
    ),
  )
}

/** Every `.ts` file under `directory`. */
async function sources(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => `${entry.parentPath}/${entry.name}`)
}

describe('docs/server-api.md', () => {
  let server: TestServer
  let doc: string
  let registered: string[]

  beforeAll(async () => {
    doc = await readFile(DOC, 'utf8')
    // Every optional route on: `/mcp` (given a handler) and `/metrics` (metrics.enabled, the default).
    server = await startTestServer()
    const http = createHttpApp(server.app, { mcp: async () => new Response(null, { status: 204 }) })
    registered = [
      ...new Set(
        inspectRoutes(http)
          .filter((route) => !route.isMiddleware)
          .map((route) => normalise(route.method, route.path)),
      ),
    ]
  }, 60_000)
  afterAll(async () => {
    await server?.dispose()
  })

  it('documents every route the server registers', () => {
    expect(registered.length).toBeGreaterThan(30)
    const patterns = documentedRoutes(doc).map(routePattern)
    const missing = registered.filter((route) => !patterns.some((pattern) => pattern.test(route)))
    expect(missing, 'routes with no `### `METHOD /path`` heading in docs/server-api.md').toEqual([])
  })

  it('documents no route that does not exist', () => {
    const documented = documentedRoutes(doc)
    expect(documented).toContain('GET /healthz')
    const stale = documented.filter((route) => !registered.some((found) => routePattern(route).test(found)))
    expect(stale, 'documented routes the server does not register').toEqual([])
  })

  it('documents every event with each of its fields, and no other event', () => {
    const rows = documentedEvents(doc)
    const events: Record<string, readonly string[]> = { ...STREAM_EVENTS, ...SERVER_EVENTS }
    expect(Object.keys(events)).toContain('cron.run.end')
    for (const [type, fields] of Object.entries(events)) {
      const row = rows.get(type)
      expect(row, `no row for the event ${type}`).toBeDefined()
      for (const field of fields) {
        expect(row, `the field ${field} of ${type}`).toContain(`\`${field.replace(/\?$/, '')}\``)
      }
    }
    expect([...rows.keys()].filter((type) => !Object.hasOwn(events, type))).toEqual([])
  })

  it('every server publisher goes through the typed emit, so SERVER_EVENTS is the whole list', async () => {
    const untyped: string[] = []
    for (const file of await sources(SOURCE)) {
      if (file.endsWith('/src/events.ts')) continue
      const text = await readFile(file, 'utf8')
      if (/\bevents\??\.publish\(|\.publish\(\s*['`]/.test(text)) untyped.push(file.slice(SOURCE.length))
    }
    expect(untyped).toEqual([])
  })

  it("gives each error code of the table the status ERROR_STATUS gives it, and lists the HTTP layer's, the tools' and the server's answered codes", () => {
    const rows = documentedErrors(doc)
    expect(rows.size).toBeGreaterThan(20)
    for (const [code, status] of rows) {
      expect(Object.hasOwn(ERROR_STATUS, code), `${code} is not a code`).toBe(true)
      expect(status, code).toBe(ERROR_STATUS[code as keyof typeof ERROR_STATUS])
    }
    // Answered as an error's `code`: the HTTP layer's and the tools' codes, ServerError's and AgentError's.
    const answered = Object.keys(ERROR_STATUS).filter((code) => !REASON_ONLY.test(code))
    expect(answered.filter((code) => !rows.has(code))).toEqual([])
  })

  it('the rule it gives for the codes that reach the API only as a reason holds', () => {
    const reasons = Object.entries(ERROR_STATUS).filter(([code]) => REASON_ONLY.test(code))
    expect(reasons.length).toBeGreaterThan(50)
    const broken = reasons.filter(([code, status]) => status !== (code.endsWith('_NOT_FOUND') ? 404 : 422))
    expect(broken).toEqual([])
  })
})
