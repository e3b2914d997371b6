import type { Context, Hono } from 'hono'
import { uiPage } from './page.js'
import { UI_SCRIPT } from './script.js'
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

/**
 * The operator dashboard (issue 15, docs/decisions/0012-dashboard.md): `GET /ui` (and `/ui/`) is
 * one HTML page, `/ui/app.js` its hand-written ES module, `/ui/style.css` its style sheet. The
 * assets are template literals in .ts modules, so tsup inlines them into dist. Register these
 * routes before the bearer guard: they carry no data, and every data call the page makes sends
 * `Authorization: Bearer <token>`.
 */
export function registerUiRoutes(http: Hono, options: UiRoutesOptions): void {
  const page = uiPage({ tokenRequired: options.tokenRequired })
  const send = (c: Context, body: string, type: string): Response =>
    c.body(body, 200, { ...HEADERS, 'content-type': type })
  http.get('/ui', (c) => send(c, page, 'text/html; charset=utf-8'))
  http.get('/ui/', (c) => send(c, page, 'text/html; charset=utf-8'))
  http.get('/ui/app.js', (c) => send(c, UI_SCRIPT, 'text/javascript; charset=utf-8'))
  http.get('/ui/style.css', (c) => send(c, UI_STYLE, 'text/css; charset=utf-8'))
}
