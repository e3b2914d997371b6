import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { readDuration } from '@lango/duration'
import type { Context, Hono } from 'hono'
import { uiPage } from './page.js'
import { UI_STYLE } from './style.js'

/** Options of {@link registerUiRoutes}. */
export interface UiRoutesOptions {
  /**
   * The API needs a bearer token (`server.apiToken`): the page asks for it before it calls the API.
   * The page itself and its assets hold no data and load without it.
   */
  readonly tokenRequired: boolean
}

/**
 * Every asset is served by this server (no CDN), so the policy allows this origin only. `no-cache`:
 * the browser asks again on every load, and its `If-None-Match` gets a `304` while the asset is
 * unchanged (a new server version changes the ETag).
 */
const HEADERS = {
  'cache-control': 'no-cache',
  vary: 'accept-encoding',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
}

const SCRIPT_TYPE = 'text/javascript; charset=utf-8'

/**
 * The dashboard's ES modules, `assets/*.js` next to this module: `src/ui/assets/` under vitest, and
 * `dist/assets/` in the built server (tsup bundles this module into a chunk at the root of `dist/`,
 * and its `onSuccess` copies the modules there).
 */
const ASSETS = new URL('./assets/', import.meta.url)

/**
 * `/ui/duration.js`: `readDuration` of @lango/duration, embedded by its source (ADR 0013), so the page
 * can never read a duration differently from the server. `intervals.js` imports it.
 */
function durationModule(): string {
  return `// readDuration of @lango/duration, embedded by its source (ADR 0013)\nexport const readDuration = (${String(readDuration)})\n`
}

/** Every `assets/*.js` file by its name, read once. */
function readModules(): ReadonlyMap<string, string> {
  const names = readdirSync(ASSETS).filter((name) => name.endsWith('.js'))
  return new Map(names.map((name) => [name, readFileSync(new URL(name, ASSETS), 'utf8')]))
}

/** One asset as it is sent: its text, its ETag, and its gzip form where that is smaller. */
interface Asset {
  readonly body: string
  readonly type: string
  readonly etag: string
  readonly gzip: Uint8Array | undefined
}

function asset(body: string, type: string): Asset {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
  const gzip = gzipSync(body, { level: 9 })
  return { body, type, etag, gzip: gzip.length < Buffer.byteLength(body) ? new Uint8Array(gzip) : undefined }
}

/** Whether `If-None-Match` names `etag` (or is `*`). */
function unchanged(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === etag || tag === '*')
}

/** Whether `Accept-Encoding` allows gzip (a `q=0` refuses it). */
function acceptsGzip(acceptEncoding: string | undefined): boolean {
  if (acceptEncoding === undefined) return false
  return acceptEncoding.split(',').some((part) => {
    const [coding, ...parameters] = part.trim().toLowerCase().split(';')
    if (coding !== 'gzip' && coding !== '*') return false
    const q = parameters.map((parameter) => /^\s*q=([0-9.]+)\s*$/.exec(parameter)).find(Boolean)
    return q === undefined || q === null || Number(q[1]) > 0
  })
}

/**
 * Sends an asset: `304` to a browser that holds this version, gzip to one that takes it (the page's
 * modules and style are ~180 KiB as text, ~50 KiB compressed: compressed once, at start), else the text.
 */
function sendAsset(c: Context, item: Asset): Response {
  const headers = { ...HEADERS, 'content-type': item.type, etag: item.etag }
  if (unchanged(c.req.header('if-none-match'), item.etag)) return c.body(null, 304, headers)
  if (item.gzip !== undefined && acceptsGzip(c.req.header('accept-encoding')))
    return c.body(item.gzip as Uint8Array<ArrayBuffer>, 200, { ...headers, 'content-encoding': 'gzip' })
  return c.body(item.body, 200, headers)
}

/**
 * The operator dashboard (issue 15, docs/decisions/0012-dashboard.md): `GET /ui` (and `/ui/`) is
 * one HTML page, `/ui/app.js` its hand-written entry ES module, which imports the others
 * (`/ui/<name>.js`, one per page and helper, from `assets/`), and `/ui/style.css` its style sheet.
 * The modules are read from disk once, when the routes are registered. Register these routes before
 * the bearer guard: they carry no data, and every data call the page makes sends
 * `Authorization: Bearer <token>`.
 */
export function registerUiRoutes(http: Hono, options: UiRoutesOptions): void {
  const modules = new Map(readModules())
  modules.set('duration.js', durationModule())
  const imported = [...modules.keys()].filter((name) => name !== 'app.js').map((name) => `/ui/${name}`)
  const page = asset(
    uiPage({ tokenRequired: options.tokenRequired, modules: imported }),
    'text/html; charset=utf-8',
  )
  http.get('/ui', (c) => sendAsset(c, page))
  http.get('/ui/', (c) => sendAsset(c, page))
  for (const [name, source] of modules) {
    const script = asset(source, SCRIPT_TYPE)
    http.get(`/ui/${name}`, (c) => sendAsset(c, script))
  }
  const style = asset(UI_STYLE, 'text/css; charset=utf-8')
  http.get('/ui/style.css', (c) => sendAsset(c, style))
}
