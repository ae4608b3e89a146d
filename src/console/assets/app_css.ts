/**
 * The console's one style sheet, embedded in the program (so `deno compile`
 * carries it) and served at a hashed name by `../assets.ts`. A light scheme
 * and a dark one following the system (`prefers-color-scheme`), laid out
 * for a 1280x800 screen and a phone alike. No page carries inline style:
 * the Content-Security-Policy (`style-src 'self'`) refuses it.
 *
 * @module
 */

/** The text of `app.<hash>.css`. */
export const APP_CSS = `:root {
  color-scheme: light dark;
  --bg: #ffffff;
  --fg: #1b1f24;
  --muted: #59636e;
  --line: #d1d9e0;
  --panel: #f6f8fa;
  --accent: #0969da;
  --danger: #cf222e;
  --ok: #1a7f37;
  --warn: #9a6700;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  font-size: 15px;
  line-height: 1.45;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117;
    --fg: #e6edf3;
    --muted: #9198a1;
    --line: #3d444d;
    --panel: #151b23;
    --accent: #4493f8;
    --danger: #f85149;
    --ok: #3fb950;
    --warn: #d29922;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible {
  outline: 2px solid var(--accent);
  outline-offset: 2px;
}
.skip { position: absolute; left: -10000px; }
.skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: 0.5rem; z-index: 10; }
header.top {
  display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.5rem;
  padding: 0.6rem 1.25rem; border-bottom: 1px solid var(--line); background: var(--panel);
}
header.top .brand { font-weight: 700; text-decoration: none; color: var(--fg); }
nav.pages ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; list-style: none; margin: 0; padding: 0; }
nav.pages a { text-decoration: none; padding: 0.2rem 0; }
nav.pages a[aria-current="page"] { font-weight: 700; border-bottom: 2px solid var(--accent); }
.who { margin-left: auto; display: flex; align-items: center; gap: 0.75rem; color: var(--muted); }
.who form { margin: 0; }
main { padding: 1rem 1.25rem 2rem; max-width: 1400px; }
h1 { font-size: 1.35rem; margin: 0.25rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 0.5rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; }
.note { color: var(--muted); }
.badge { display: inline-block; padding: 0 0.4rem; border-radius: 0.6rem; border: 1px solid var(--line); font-size: 0.85em; }
.badge.bad { color: var(--danger); border-color: var(--danger); }
.badge.good { color: var(--ok); border-color: var(--ok); }
.badge.warn { color: var(--warn); border-color: var(--warn); }
button, .button {
  font: inherit; padding: 0.35rem 0.8rem; border-radius: 6px; cursor: pointer;
  border: 1px solid var(--line); background: var(--panel); color: var(--fg);
}
button.primary { background: var(--accent); border-color: var(--accent); color: #ffffff; }
button.link { border: none; background: none; color: var(--accent); padding: 0; text-decoration: underline; }
.signin { max-width: 22rem; margin: 12vh auto; padding: 1.5rem; border: 1px solid var(--line); border-radius: 8px; background: var(--panel); }
.signin h1 { margin-top: 0; }
.signin label { display: block; margin: 0.75rem 0 0.25rem; }
.signin input { width: 100%; font: inherit; padding: 0.4rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
.signin button { margin-top: 1rem; width: 100%; }
.message { padding: 0.5rem 0.75rem; border-radius: 6px; border: 1px solid var(--line); margin: 0.75rem 0; }
.message.error { border-color: var(--danger); color: var(--danger); }
@media (max-width: 640px) {
  :root { font-size: 16px; }
  header.top { padding: 0.5rem 0.75rem; }
  .who { margin-left: 0; width: 100%; justify-content: space-between; }
  main { padding: 0.75rem; }
  th, td { padding: 0.3rem 0.4rem; }
}
/* jobs */
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
form.filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 0.5rem 0.75rem; margin: 0 0 0.75rem; }
form.filters label { display: flex; flex-direction: column; font-size: 0.85em; color: var(--muted); gap: 0.15rem; }
form.filters input, form.filters select, .bulk-actions input, details.action input[name=reason] {
  font: inherit; padding: 0.3rem 0.45rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--fg);
}
form.filters input { width: 9rem; }
form.filters input[type=search] { width: 16rem; }
.bulk-actions { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; margin: 0.5rem 0; }
.bulk-actions input[name=reason] { width: 20rem; }
table.jobs td { max-width: 14rem; overflow: hidden; text-overflow: ellipsis; }
table.jobs tr:focus-within { background: var(--panel); }
td.wrap { white-space: pre-wrap; overflow-wrap: anywhere; }
button.danger { border-color: var(--danger); color: var(--danger); }
dl.fields { display: grid; grid-template-columns: repeat(auto-fill, minmax(20rem, 1fr)); gap: 0.25rem 1.5rem; margin: 0; }
dl.fields div { display: flex; gap: 0.75rem; border-bottom: 1px solid var(--line); padding: 0.2rem 0; }
dl.fields dt { color: var(--muted); min-width: 8.5rem; }
dl.fields dd { margin: 0; overflow-wrap: anywhere; }
ul.tags { display: flex; flex-wrap: wrap; gap: 0.25rem; list-style: none; margin: 0; padding: 0; }
pre.data { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 0.75rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem; }
pre.data.error { border-color: var(--danger); }
article.attempt { border-left: 3px solid var(--line); padding-left: 0.75rem; margin: 0.75rem 0; }
article.attempt h3 { font-size: 1rem; margin: 0; }
section.job-actions { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: flex-start; }
section.job-actions h2 { width: 100%; margin-bottom: 0; }
details.action { border: 1px solid var(--line); border-radius: 6px; padding: 0.35rem 0.75rem; }
details.action summary { cursor: pointer; font-weight: 600; }
details.action form { display: flex; flex-direction: column; gap: 0.4rem; margin: 0.5rem 0 0.25rem; min-width: 18rem; }
details.action fieldset { border: 1px solid var(--line); border-radius: 6px; }
ul.differences { margin: 0.25rem 0; }
/* queues, schedules */
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.why { white-space: pre-wrap; overflow-wrap: anywhere; max-width: 28rem; color: var(--fg); }
td.paused, table.schedules td { white-space: normal; vertical-align: top; }
td.paused { min-width: 18rem; }
table.queues th[scope=row] { white-space: normal; overflow-wrap: anywhere; max-width: 12rem; }
form.inline-action input { min-width: 6rem; flex: 1; }
table.queues th.num, table.queues td.num { padding-left: 0.35rem; padding-right: 0.35rem; }
table.schedules th[scope=row] { vertical-align: top; }
form.inline-action { display: flex; gap: 0.4rem; margin: 0.3rem 0 0; }
form.inline-action input, form.action input {
  font: inherit; padding: 0.3rem 0.4rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--fg); min-width: 10rem;
}
ul.runs { list-style: none; margin: 0; padding: 0; }
ul.runs li { margin: 0.1rem 0; }
.badge.dst { margin-left: 0.4rem; white-space: normal; }
dl.lasts { display: grid; grid-template-columns: auto 1fr; gap: 0 0.5rem; margin: 0; font-size: 0.9em; }
dl.lasts dt { color: var(--muted); }
dl.lasts dd { margin: 0; }
dl.lasts dd.bad { color: var(--danger); }
dl.facts { display: grid; grid-template-columns: 10rem 1fr; gap: 0.35rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
form.filters { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; margin: 0 0 0.5rem; }
form.filters input { font: inherit; padding: 0.3rem 0.4rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
.actions { display: flex; flex-wrap: wrap; gap: 1rem 2rem; }
form.action { display: grid; gap: 0.3rem; max-width: 24rem; padding: 0.75rem; border: 1px solid var(--line); border-radius: 8px; background: var(--panel); }
form.action .note { margin: 0; font-size: 0.9em; }
.message.done { border-color: var(--ok); }
.procedure h3 { font-size: 1rem; margin: 1rem 0 0.25rem; }
.procedure p { margin: 0.2rem 0; }
pre.paste { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 0.75rem; overflow-x: auto; margin: 0.4rem 0; }
@media (max-width: 640px) {
  dl.facts { grid-template-columns: 1fr; }
  form.inline-action { flex-direction: column; }
}
/* audit, people, tokens, sessions */
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
form.filters { display: flex; flex-wrap: wrap; align-items: end; gap: 0.5rem 1rem; margin: 0 0 1rem; }
form.filters input, form.filters select, form.stacked input, td.actions input, details input:not([type]) {
  font: inherit; padding: 0.3rem 0.4rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg);
}
form.stacked { display: grid; grid-template-columns: max-content minmax(12rem, 24rem); gap: 0.5rem 0.75rem; align-items: center; }
form.stacked fieldset, form.stacked button { grid-column: 1 / -1; justify-self: start; }
fieldset.roles { border: 1px solid var(--line); border-radius: 6px; padding: 0.3rem 0.6rem; display: flex; flex-wrap: wrap; gap: 0.25rem 0.9rem; }
fieldset.roles legend { color: var(--muted); padding: 0 0.25rem; }
td.wrap { white-space: normal; overflow-wrap: anywhere; min-width: 12rem; max-width: 28rem; }
td.actions { white-space: normal; min-width: 16rem; }
td.actions form.inline { display: flex; gap: 0.4rem; margin: 0 0 0.3rem; }
td.actions form.inline input { width: 9rem; }
td.actions details form { margin: 0.4rem 0; display: flex; flex-direction: column; align-items: start; gap: 0.3rem; }
.note.ago { font-size: 0.85em; }
.pager { display: flex; gap: 1rem; }
.message.warn { border-color: var(--warn); color: var(--warn); }
section.secret { border: 1px solid var(--warn); border-radius: 8px; padding: 0.25rem 1rem; margin: 0.75rem 0; }
code.token-secret { font-size: 1.05em; user-select: all; overflow-wrap: anywhere; }
/* workflows, pipelines, reports */
form.filters { display: flex; flex-wrap: wrap; align-items: end; gap: 0.5rem 1rem; margin: 0 0 1rem; }
form.filters input, form.filters select, form.action input, .report-form input, .report-form select {
  font: inherit; padding: 0.3rem 0.4rem; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); color: var(--fg);
}
form.action { display: flex; flex-wrap: wrap; align-items: center; gap: 0.4rem 0.6rem; margin: 0.5rem 0; }
form.action.inline { margin: 0; flex-wrap: nowrap; }
form.action.inline input { width: 9rem; }
.actions { display: flex; flex-wrap: wrap; gap: 0.5rem 2rem; margin: 0.5rem 0 1rem; }
td.clip { max-width: 28rem; overflow: hidden; text-overflow: ellipsis; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0 0 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
pre.error-text, pre.json {
  margin: 0.25rem 0; padding: 0.4rem 0.6rem; background: var(--panel); border: 1px solid var(--line);
  border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 16rem; overflow: auto;
}
pre.error-text { color: var(--danger); }
ul.tree { list-style: none; margin: 0; padding-left: 1.25rem; border-left: 1px solid var(--line); }
ul.tree[role="tree"] { padding-left: 0; border-left: none; }
ul.tree li { margin: 0.3rem 0; }
.step-notes { margin-left: 0.4rem; }
ol.compensations li { margin: 0.3rem 0; }
section.pipeline { border-top: 1px solid var(--line); padding-top: 0.25rem; }
.pipeline-grid { display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 1rem 2rem; }
.pipeline-grid h3, .report h3 { font-size: 1rem; margin: 0.75rem 0 0.4rem; }
svg.chart { max-width: 100%; height: auto; }
svg.chart .chart-label, svg.chart .chart-value { fill: var(--fg); font-size: 12px; }
svg.chart .bar-hour { fill: var(--warn); }
svg.chart .bar-day { fill: var(--accent); }
.report-list { display: grid; grid-template-columns: repeat(auto-fill, minmax(22rem, 1fr)); gap: 1rem; }
article.report { border: 1px solid var(--line); border-radius: 8px; padding: 0.25rem 1rem 1rem; background: var(--panel); }
.report-form .field { display: flex; flex-direction: column; gap: 0.2rem; margin: 0 0 0.6rem; }
@media (max-width: 640px) {
  .pipeline-grid { grid-template-columns: 1fr; }
  form.action.inline { flex-wrap: wrap; }
}
/* bulk */
p.bulk-all { display: flex; flex-wrap: wrap; gap: 0.4rem 1.25rem; margin: 0 0 0.75rem; }
section.bulk-run progress { width: 100%; max-width: 40rem; height: 1.1rem; }
/* overview: attention list, throughput charts */
ul.attention { margin: 0 0 1rem; padding-left: 1.25rem; }
ul.attention li { margin: 0.25rem 0; }
ul.attention li[data-attention="schedule-failing"] a,
ul.attention li[data-attention="job-stuck"] a { color: var(--danger); }
figure.throughput { margin: 0 0 1rem; }
svg.chart .completed { fill: var(--ok); }
svg.chart .failed { fill: var(--danger); }
svg.chart .axis { stroke: var(--line); stroke-width: 1; }
svg.chart .chart-label.end { text-anchor: end; }
svg.sparkline { vertical-align: middle; }
figcaption .key::before { content: ""; display: inline-block; width: 0.7em; height: 0.7em; margin-right: 0.3em; }
figcaption .key.completed::before { background: var(--ok); }
figcaption .key.failed::before { background: var(--danger); }
/* Work queues (work.tsx) and TOTP enrolment (people.tsx). */
[hidden] { display: none !important; }
p.live-changed { border-left: 3px solid var(--warn, #b58900); padding-left: 0.5rem; }
form.work-next { margin: 0.5rem 0 1rem; }
table.work-items td[data-score] { white-space: nowrap; }
ul.terms { margin: 0; padding-left: 1.2rem; }
pre.work-data { max-height: 24rem; overflow: auto; }
section.work-actions form.inline-action { display: block; margin: 0.4rem 0; }
svg.totp-qr { width: 16rem; height: 16rem; display: block; margin: 1rem 0; }
svg.totp-qr .qr-light { fill: #ffffff; }
svg.totp-qr .qr-dark { stroke: #000000; fill: none; }
/* Bulk money on work queues (work_bulk.tsx, the listing's selection in work.tsx). */
form.work-bulk { margin: 0.5rem 0 1rem; }
form.work-bulk button { margin-right: 0.4rem; }
table.work-items td.select { width: 1.5rem; }
p.bulk-summary { font-size: 1.1rem; font-weight: 600; }
p.bulk-manifest code, dl.bulk-request code { font-family: monospace; }
form.bulk-request, form.bulk-confirm { margin: 1rem 0; }
form.bulk-request .note, form.bulk-confirm button { margin-left: 0.6rem; }
form.bulk-confirm label { margin-right: 0.4rem; }
form.bulk-confirm input[name=code] { width: 9rem; font-family: monospace; letter-spacing: 0.15em; }
table.bulk-items td.num, table.bulk-totals td.num { font-variant-numeric: tabular-nums; }
`;
