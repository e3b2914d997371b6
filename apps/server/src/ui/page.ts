/**
 * The dashboard's one HTML page; `tokenRequired` tells the script to ask for the API token first.
 * `modules` are the paths of the modules `/ui/app.js` imports, directly or not: the page asks for
 * them at once (`modulepreload`) instead of one import level after another. The entry module comes
 * first: a browser opens six connections to a host, and the entry queued behind sixteen preloads
 * started last.
 */
export function uiPage(options: {
  readonly tokenRequired: boolean
  readonly modules: readonly string[]
}): string {
  const preloads = options.modules.map((path) => `<link rel="modulepreload" href="${path}">\n`).join('')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Lango dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/style.css">
<script type="module" src="/ui/app.js"></script>
${preloads}
</head>
<body data-token-required="${options.tokenRequired ? 'true' : 'false'}">
<header class="top">
  <p class="brand">Lango</p>
  <nav aria-label="Dashboard sections">
    <ul>
      <li><a href="#/overview">Overview</a></li>
      <li><a href="#/cron">Cron</a></li>
      <li><a href="#/workflows">Workflows</a></li>
      <li><a href="#/approvals">Approvals</a></li>
      <li><a href="#/background">Background</a></li>
      <li><a href="#/processes">Processes</a></li>
    </ul>
  </nav>
  <p id="live" class="live" data-state="off">Live updates: off</p>
  <fieldset id="zone-mode" class="zone-mode">
    <legend>Show times in</legend>
    <label><input type="radio" name="zone-mode" value="job"> job's zone</label>
    <label><input type="radio" name="zone-mode" value="utc"> UTC</label>
    <label><input type="radio" name="zone-mode" value="local"> local</label>
  </fieldset>
  <button type="button" id="forget-token" hidden>Forget token</button>
</header>
<div id="banner" class="banner" role="status" hidden></div>
<main id="main" tabindex="-1">
  <noscript><p>This dashboard needs JavaScript; the same data is in the HTTP API (its section in apps/server/README.md) and the <code>lango</code> CLI.</p></noscript>
</main>
<div id="announcer" class="visually-hidden" role="status" aria-live="polite"></div>
</body>
</html>
`
}
