import { readdirSync, readFileSync } from 'node:fs'
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

/** Every asset is served by this server (no CDN), so the policy allows this origin only. */
const HEADERS = {
  'cache-control': 'no-cache',
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
  const page = uiPage({ tokenRequired: options.tokenRequired, modules: imported })
  const send = (c: Context, body: string, type: string): Response =>
    c.body(body, 200, { ...HEADERS, 'content-type': type })
  http.get('/ui', (c) => send(c, page, 'text/html; charset=utf-8'))
  http.get('/ui/', (c) => send(c, page, 'text/html; charset=utf-8'))
  for (const [name, source] of modules) {
    http.get(`/ui/${name}`, (c) => send(c, source, SCRIPT_TYPE))
  }
  http.get('/ui/style.css', (c) => send(c, UI_STYLE, 'text/css; charset=utf-8'))
}
