/** The dashboard's style sheet, served as `/ui/style.css`. */
export const UI_STYLE = `:root {
  color-scheme: light dark;
  --bg: #fafafa;
  --fg: #1b1b1f;
  --muted: #5c5f66;
  --line: #d5d7dc;
  --card: #ffffff;
  --accent: #1f5fbf;
  --good-bg: #dcf3e2; --good-fg: #0d5a26;
  --bad-bg: #fbe0e0; --bad-fg: #8a1212;
  --warn-bg: #fdf0d2; --warn-fg: #6b4700;
  --info-bg: #dde9fb; --info-fg: #173f7a;
  --muted-bg: #eceef1; --muted-fg: #45484e;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  line-height: 1.45;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #15161a; --fg: #e8e9ec; --muted: #a3a7ae; --line: #34363d; --card: #1e2026; --accent: #8ab4ff;
    --good-bg: #173d25; --good-fg: #b6f0c8; --bad-bg: #4a1818; --bad-fg: #ffc9c9;
    --warn-bg: #463612; --warn-fg: #ffe2a3; --info-bg: #1b3156; --info-fg: #c8dcff;
    --muted-bg: #2b2e35; --muted-fg: #c9ccd2;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.25rem; padding: 0.6rem 1rem; border-bottom: 1px solid var(--line); background: var(--card); }
.brand { margin: 0; font-weight: 700; }
nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; margin: 0; padding: 0; list-style: none; }
nav a { display: inline-block; padding: 0.35rem 0.1rem; text-decoration: none; }
nav a[aria-current="page"] { font-weight: 700; text-decoration: underline; text-underline-offset: 0.3em; }
.live { margin: 0 0 0 auto; font-size: 0.85rem; color: var(--muted); }
.live::before { content: ""; display: inline-block; width: 0.6rem; height: 0.6rem; margin-right: 0.35rem; border-radius: 50%; background: var(--muted); }
.live[data-state="on"]::before { background: #2f9e55; }
.live[data-state="connecting"]::before { background: #d19a00; }
.zone-mode { display: flex; flex-wrap: wrap; align-items: center; gap: 0.25rem 0.75rem; margin: 0; padding: 0; border: 0; font-size: 0.85rem; }
.zone-mode legend { float: left; padding: 0; margin-right: 0.25rem; color: var(--muted); }
.zone-mode label { display: inline-flex; align-items: center; gap: 0.25rem; min-height: 2rem; cursor: pointer; }
time .zone { color: var(--muted); }
main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
main:focus { outline: none; }
h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
button { font: inherit; min-height: 2.5rem; padding: 0.35rem 0.9rem; border: 1px solid var(--line); border-radius: 0.4rem; background: var(--card); color: var(--fg); cursor: pointer; }
button:hover { border-color: var(--accent); }
button:disabled { opacity: 0.6; cursor: progress; }
button[aria-disabled="true"] { opacity: 0.6; cursor: not-allowed; }
button.approve { background: var(--good-bg); color: var(--good-fg); }
button.deny { background: var(--bad-bg); color: var(--bad-fg); }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.5rem 0; }
.wrap { overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.small { font-size: 0.85rem; }
.words { display: block; color: var(--muted); font-size: 0.9em; }
.relative { color: var(--muted); font-size: 0.9em; }
.badge { display: inline-block; padding: 0.05rem 0.5rem; border-radius: 1rem; font-size: 0.85rem; font-weight: 600; white-space: nowrap; }
.tone-good { background: var(--good-bg); color: var(--good-fg); }
.tone-bad { background: var(--bad-bg); color: var(--bad-fg); }
.tone-warn { background: var(--warn-bg); color: var(--warn-fg); }
.tone-info { background: var(--info-bg); color: var(--info-fg); }
.tone-muted { background: var(--muted-bg); color: var(--muted-fg); }
.tone-wait { background: transparent; color: var(--info-fg); box-shadow: inset 0 0 0 1px currentColor; }
.state-icon { display: inline-block; margin-right: 0.25rem; }
.counters { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: 0.75rem; }
.counter { display: flex; flex-direction: column; padding: 0.75rem 1rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--card); color: var(--fg); text-decoration: none; }
.counter .count { font-size: 1.8rem; font-weight: 700; }
.counter.tone-bad { border-color: var(--bad-fg); }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.3rem 1rem; margin: 0.5rem 0; }
.facts dt { font-weight: 600; }
.facts dd { margin: 0; }
table { width: 100%; border-collapse: collapse; background: var(--card); }
th, td { text-align: left; vertical-align: top; padding: 0.5rem; border-bottom: 1px solid var(--line); }
thead th { font-size: 0.85rem; color: var(--muted); }
.actions { display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0.4rem 0; }
.actions.rerun { align-items: center; }
.reason { margin: 0.25rem 0 0; }
.notice:empty { display: none; }
.banner { margin: 0.5rem 1rem 0; display: grid; gap: 0.4rem; }
.banner[hidden] { display: none; }
.banner-item { margin: 0; padding: 0.5rem 0.75rem; border-radius: 0.4rem; font-weight: 600; }
.notice, .error { color: var(--bad-fg); background: var(--bad-bg); padding: 0.5rem 0.75rem; border-radius: 0.4rem; }
.cards { list-style: none; padding: 0; display: grid; gap: 0.75rem; }
.card { padding: 0.75rem 1rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--card); }
.card h2 { margin-top: 0; }
.deliveries { list-style: none; margin: 0.3rem 0 0; padding: 0; display: grid; gap: 0.2rem; font-size: 0.9rem; }
.timeline { list-style: none; padding: 0 0 0 1rem; border-left: 3px solid var(--line); }
.entry { position: relative; margin: 0 0 0.9rem; padding-left: 0.5rem; }
.entry::before { content: ""; position: absolute; left: -1.45rem; top: 0.4rem; width: 0.75rem; height: 0.75rem; border-radius: 50%; background: var(--muted); }
.entry[data-status="completed"]::before { background: #2f9e55; }
.entry[data-status="failed"]::before, .entry[data-status="timed_out"]::before { background: #c62828; }
.entry[data-status="running"]::before { background: var(--accent); }
.steps { list-style: none; padding: 0; display: grid; gap: 0.5rem; }
.step { padding: 0.5rem 0.75rem; border: 1px solid var(--line); border-left-width: 0.4rem; border-radius: 0.4rem; background: var(--card); }
.step[data-status="completed"] { border-left-color: #2f9e55; }
.step[data-status="failed"] { border-left-color: #c62828; }
.step[data-status="running"] { border-left-color: var(--accent); }
.step[data-status="cancelled"], .step[data-status="skipped"] { border-left-color: #d19a00; }
.graph { position: relative; display: flex; align-items: center; gap: 3.5rem; overflow: auto; padding: 1rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--card); }
.layer { position: relative; z-index: 1; display: flex; flex-direction: column; gap: 0.75rem; }
.edges { position: absolute; top: 0; left: 0; z-index: 0; pointer-events: none; }
.edge { fill: none; stroke: var(--muted); stroke-width: 2; stroke-dasharray: 5 4; }
.edge[data-status="completed"] { stroke: #2f9e55; stroke-dasharray: none; }
.edge[data-status="failed"] { stroke: #c62828; }
.edge[data-status="running"] { stroke: var(--accent); }
.edges marker path { fill: var(--muted); }
.edges marker[data-status="completed"] path { fill: #2f9e55; }
.edges marker[data-status="failed"] path { fill: #c62828; }
.edges marker[data-status="running"] path { fill: var(--accent); }
.node { display: flex; flex-direction: column; align-items: flex-start; gap: 0.2rem; min-width: 8rem; max-width: 16rem; text-align: left; border: 2px solid var(--line); border-left-width: 0.5rem; }
.node[data-state="pending"] { border-style: dashed; }
.node-id { font-weight: 700; overflow-wrap: break-word; }
.node-after { font-size: 0.8rem; color: var(--muted); overflow-wrap: break-word; }
.node[data-status="completed"] { border-color: #2f9e55; }
.node[data-status="failed"] { border-color: #c62828; }
.node[data-status="running"] { border-color: var(--accent); }
.node[data-status="cancelled"], .node[data-status="skipped"] { border-color: #d19a00; }
.node[aria-pressed="true"] { box-shadow: 0 0 0 3px var(--accent); }
.step-detail { margin: 0.75rem 0; padding: 0.5rem 0.75rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--card); }
.step-detail h3 { margin: 0.25rem 0 0.5rem; font-size: 1.05rem; }
.step-detail h4 { margin: 0.5rem 0 0; font-size: 0.95rem; }
.command { white-space: pre-wrap; }
.tail { max-height: 16rem; overflow: auto; padding: 0.5rem; border-radius: 0.4rem; background: var(--muted-bg); }
.card h3 { margin: 0 0 0.3rem; font-size: 1rem; }
.token-form { display: flex; flex-direction: column; gap: 0.5rem; max-width: 28rem; }
.token-form input { font: inherit; padding: 0.5rem; border: 1px solid var(--line); border-radius: 0.4rem; background: var(--card); color: var(--fg); }
.token-form button { align-self: flex-start; }
.filters { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: flex-end; margin: 0.5rem 0 1rem; }
.filter { display: flex; flex-direction: column; gap: 0.2rem; }
.filter.check { flex-direction: row; align-items: center; gap: 0.35rem; }
.filter.buttons { flex-direction: row; align-items: center; gap: 0.75rem; }
.filters input:not([type=checkbox]), .filters select { font: inherit; padding: 0.35rem 0.5rem; border: 1px solid var(--line); border-radius: 0.4rem; background: var(--card); color: var(--fg); }
.triage ul { margin: 0.3rem 0 1rem; padding-left: 1.2rem; }
.triage h3 { margin: 0.8rem 0 0.2rem; font-size: 1rem; }
.button { display: inline-flex; align-items: center; min-height: 2.5rem; padding: 0.35rem 0.9rem; border: 1px solid var(--line); border-radius: 0.4rem; background: var(--card); color: var(--fg); text-decoration: none; box-sizing: border-box; }
.button:hover { border-color: var(--accent); }
.form-with-preview { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 1.5rem; align-items: start; }
.job-form { display: grid; grid-template-columns: minmax(0, 1fr); gap: 0.75rem; }
.form-row { display: flex; flex-direction: column; gap: 0.2rem; margin: 0; min-width: 0; }
.form-row[hidden] { display: none; }
.form-row.kind { border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.4rem 0.75rem; flex-direction: row; flex-wrap: wrap; gap: 0.3rem 1rem; }
.form-row.kind legend { padding: 0 0.25rem; }
.job-form input:not([type=radio]), .job-form select, .job-form textarea { box-sizing: border-box; max-width: 100%; min-width: 0; font: inherit; padding: 0.4rem 0.5rem; border: 1px solid var(--line); border-radius: 0.4rem; background: var(--card); color: var(--fg); }
.job-form [aria-invalid="true"] { border-color: var(--bad-fg); border-width: 2px; }
.hint { margin: 0; }
.form-error[hidden] { display: none; }
.form-error p { margin: 0; }
.preview { padding: 0.75rem 1rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--card); }
.preview h2 { margin-top: 0; }
dialog.confirm { max-width: 32rem; border: 1px solid var(--line); border-radius: 0.5rem; background: var(--card); color: var(--fg); padding: 1rem 1.25rem; }
dialog.confirm::backdrop { background: rgb(0 0 0 / 0.45); }
dialog.confirm h2 { margin-top: 0; }
dialog.confirm .error:empty { display: none; }
.history td, .history th { font-size: 0.95rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
@media (max-width: 48rem) {
  .live { margin-left: 0; width: 100%; }
  .form-with-preview { grid-template-columns: 1fr; }
  table, thead, tbody, tr, th, td { display: block; }
  thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  tr { border: 1px solid var(--line); border-radius: 0.5rem; margin-bottom: 0.75rem; padding: 0.25rem 0.5rem; }
  th, td { border: 0; padding: 0.3rem 0; }
  td[data-label]::before, th[data-label]::before { content: attr(data-label); display: block; font-size: 0.8rem; color: var(--muted); }
  .facts { grid-template-columns: 1fr; }
  .graph { flex-direction: column; align-items: stretch; gap: 2.5rem; }
  .layer { flex-direction: row; flex-wrap: nowrap; justify-content: safe center; }
  .node { flex: 0 1 auto; min-width: 7rem; }
  .facts dd { margin-bottom: 0.4rem; }
}
`
