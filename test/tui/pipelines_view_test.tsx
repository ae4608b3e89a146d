/**
 * The pipelines screen by frame (ink-testing-library) and as coloured
 * lines: the list's freshness, last run, counts and drops per reason over
 * the hour and the day; an open pipeline's freshness sentence, drops and
 * recent runs; the overview's attention lines for a stale pipeline and a
 * paged or failed last run; and stored text cleaned.
 */

import assert from "node:assert/strict";
import { render } from "ink-testing-library";
import type { ReactElement } from "react";
import type { PipelineView } from "../../src/admin/pipelines.ts";
import { needsAttention } from "../../src/tui/data.ts";
import { overviewLines } from "../../src/tui/overview/view.tsx";
import {
  pipelineLines,
  PipelinePane,
  pipelinesLines,
  PipelinesList,
  type PipelinesListProps,
  reasonsText,
} from "../../src/tui/pipelines/view.tsx";
import { plain, type Seg } from "../../src/tui/seg.ts";
import {
  fixtureIngestRun,
  fixturePipeline,
  fixturePipelines,
  fixtureState,
  NOW,
} from "./fixtures.ts";

/** The frame of `tree` on a terminal `columns` wide, as lines. */
function frameOf(tree: ReactElement, columns: number): string[] {
  const r = render(tree);
  Object.defineProperty(r.stdout, "columns", { value: columns, configurable: true });
  r.rerender(tree);
  const frame = r.lastFrame() ?? "";
  r.unmount();
  return frame.split("\n");
}

function listProps(overrides: Partial<PipelinesListProps> = {}): PipelinesListProps {
  return {
    pipelines: fixturePipelines(),
    cursor: 1,
    width: 80,
    height: 12,
    now: NOW,
    ...overrides,
  };
}

function pane(view: PipelineView, width = 80, height = 16, scroll = 0): string[] {
  return frameOf(
    <PipelinePane
      view={view}
      id={view.id}
      scroll={scroll}
      width={width}
      height={height}
      now={NOW}
    />,
    width,
  );
}

/** The segment of `line` whose text, trimmed, is `text`. */
function segOf(lines: Seg[][], line: RegExp, text: string): Seg {
  const found = lines.find((l) => line.test(plain(l)));
  assert.ok(found, `no line ${line} in:\n${lines.map(plain).join("\n")}`);
  const s = found.find((s) => s.text.trim() === text);
  assert.ok(s, `no segment "${text}" in ${JSON.stringify(found)}`);
  return s;
}

Deno.test("the pipelines list at 80 columns shows freshness, the last run with its counts, and drops per reason over the hour and the day", () => {
  const lines = frameOf(<PipelinesList {...listProps()} />, 80);
  assert.equal(lines.length, 12);
  for (const line of lines) assert.ok(Array.from(line).length <= 80, line);
  assert.deepEqual(lines.slice(0, 10), [
    "pipelines 4 · 1 stale · 1 last run failed · 1 last run paged",
    "  PIPELINE       FRESHNESS      RUN   STATE     AGE       RECV  SUNK  FAIL",
    "  catalog        STALE 2h       41    completed 2h ago    1.2k  1.2k     0",
    "    dropped 1h: none   1d: duplicate 12 · below-threshold 3",
    "> bank           advisory (erp) 7     failed    5m ago      50    40     8",
    "    dropped 1h: duplicate 2   1d: duplicate 5 · poison 1",
    "  prices         fresh 20m      3     paged     1m ago     10k     0     0",
    "    dropped 1h: none   1d: none",
    "  feed           -              -     no runs",
    "    dropped 1h: none   1d: none",
  ]);
});

Deno.test("the list's freshness and states are coloured, STALE and each state written out", () => {
  const lines = pipelinesLines(listProps());
  const stale = segOf(lines, /^ {2}catalog/, "STALE 2h");
  assert.deepEqual([stale.color, stale.bold], ["red", true]);
  assert.equal(segOf(lines, /^ {2}prices/, "fresh 20m").color, "green");
  assert.equal(segOf(lines, /^ {2}catalog/, "completed").color, "green");
  assert.equal(segOf(lines, /^> bank/, "failed").color, "red");
  assert.equal(segOf(lines, /^> bank/, "8").color, "red", "failed records");
  assert.equal(segOf(lines, /^ {2}prices/, "paged").color, "magenta");
  assert.equal(segOf(lines, /^> bank/, "bank").inverse, true, "the selected row");
});

Deno.test("a long line of drops goes on two lines, the day under the hour", () => {
  const reasons = { "below-threshold": 40, duplicate: 120, "missing-price": 7, poison: 2 };
  const lines = pipelinesLines(listProps({
    pipelines: [
      fixturePipeline({ id: "catalog", droppedLastHour: reasons, droppedLastDay: reasons }),
    ],
    cursor: 0,
  })).map(plain);
  assert.deepEqual(lines.slice(3, 5), [
    "    dropped 1h: duplicate 120 · below-threshold 40 · missing-price 7 · poison 2",
    "            1d: duplicate 120 · below-threshold 40 · missing-price 7 · poison 2",
  ]);
  assert.equal(reasonsText({ a: 0, b: 3, c: 3, d: 9 }), "d 9 · b 3 · c 3", "the most first");
});

Deno.test("the list says when there are no pipelines, and while it is read", () => {
  assert.equal(
    plain(pipelinesLines(listProps({ pipelines: [] }))[2]!),
    "  no pipelines: none in the schedules file, none with runs in the store",
  );
  assert.equal(plain(pipelinesLines(listProps({ pipelines: null }))[2]!), "  loading…");
});

Deno.test("the list keeps the selected pipeline in view and says which pipelines it shows", () => {
  const pipelines = Array.from({ length: 9 }, (_, i) => fixturePipeline({ id: `p${i + 1}` }));
  const lines = pipelinesLines(listProps({ pipelines, cursor: 7, height: 9 })).map(plain);
  assert.equal(lines.length, 9);
  assert.deepEqual(lines.filter((l) => /^. p\d/.test(l)).map((l) => l.slice(0, 4)), [
    "  p6",
    "  p7",
    "> p8",
  ]);
  assert.equal(lines.at(-1), "  pipelines 6-8 of 9");
});

Deno.test("an open pipeline shows its freshness, its drops per reason over the hour and day, and each recent run with its counts, drops and error", () => {
  const [catalog, bank] = fixturePipelines();
  assert.deepEqual(pane(catalog!).slice(0, 13), [
    "pipeline catalog  41 runs in the store  definition c0ffeec0ffee",
    "freshness  STALE: last complete run 2h ago, promised within 15m",
    "dropped    last hour none",
    "           last day  15: duplicate 12 · below-threshold 3",
    "",
    "runs (2 newest of 41)  newest first",
    "  41    completed schedule started 2h1m ago, took 1m30s",
    "        received 1215 · kept 1200 · sunk 1200 · failed 0 · pending 0",
    "        dropped 15: duplicate 12 · below-threshold 3",
    "  40    completed manual   started 5h ago, took 1m",
    "        received 900 · kept 900 · sunk 900 · failed 0 · pending 0",
    "        dropped none",
    "",
  ]);
  const failed = pane(bank!);
  assert.equal(failed[1], "freshness  advisory: erp is right; last complete run 1h ago");
  assert.deepEqual(failed.slice(6, 10), [
    "  7     failed    schedule started 6m ago, took 1m",
    "        received 50 · kept 48 · sunk 40 · failed 8 · pending 0",
    "        dropped 2: duplicate 2",
    "        error: sink answered 503",
  ]);
  const lines = pipelineLines({
    view: catalog!,
    id: "catalog",
    scroll: 0,
    width: 80,
    height: 16,
    now: NOW,
  });
  const stale = segOf(lines, /^freshness/, "STALE");
  assert.deepEqual([stale.color, stale.bold], ["red", true]);
  // A wide terminal says when each run started in UTC too.
  assert.equal(
    pane(catalog!, 120)[6],
    "  41    completed schedule started 2026-03-08 09:58 UTC (2h1m ago), took 1m30s",
  );
});

Deno.test("an open pipeline says when it is not in the schedules file, has no runs, or declares no freshness", () => {
  const lines = pane(fixturePipeline({ id: "adhoc", declared: false, hash: null }));
  assert.deepEqual(lines.slice(0, 6), [
    "pipeline adhoc  0 runs in the store  not in the schedules file",
    "freshness  none declared",
    "dropped    last hour none",
    "           last day  none",
    "",
    "runs  none yet",
  ]);
  const running = pane(fixturePipeline({
    id: "catalog",
    runs: 1,
    recent: [fixtureIngestRun({
      id: 9,
      state: "running",
      finishedAt: null,
      startedAt: NOW - 90_000,
      updatedAt: NOW - 10_000,
    })],
    freshness: { ...fixturePipelines()[0]!.freshness!, lastCompletedAt: null, ageMs: null },
  }));
  assert.equal(running[1], "freshness  STALE: no complete run yet, promised within 15m");
  assert.equal(
    running[6],
    "  9     running   schedule started 1m30s ago, last chunk 10s ago",
  );
});

Deno.test("an open pipeline scrolls, never past its last line, and says so while it is not read", () => {
  const [catalog] = fixturePipelines();
  const bottom = pane(catalog!, 80, 5, 1000);
  assert.equal(bottom.length, 5);
  assert.equal(bottom.at(-1), "        dropped none");
  assert.equal(
    pane(catalog!, 80, 5, 1)[0],
    "freshness  STALE: last complete run 2h ago, promised within 15m",
  );
  const missing = frameOf(
    <PipelinePane view={null} id="gone" scroll={0} width={80} height={3} now={NOW} />,
    80,
  );
  assert.equal(missing[0], 'pipeline "gone": loading, or no longer known');
});

Deno.test("the overview's attention names a stale pipeline and a paged or failed last run", () => {
  const state = fixtureState();
  const pipelineAttention = state.pipelines.filter(needsAttention);
  assert.deepEqual(pipelineAttention.map((p) => p.id), ["catalog", "bank", "prices"]);
  const lines = overviewLines({
    overview: { now: NOW, ...state.overview, pipelineAttention },
    cursor: 0,
    width: 80,
    height: 30,
    now: NOW,
  });
  const text = lines.map(plain);
  const at = text.findIndex((l) => l.startsWith("NEEDING ATTENTION"));
  assert.deepEqual(text.slice(at, at + 5), [
    "NEEDING ATTENTION  schedules misfired/disabled, pipelines stale/paged/failed",
    "  hourly  disabled by alice 10m ago: vendor outage",
    '  pipeline "catalog" is stale: last complete run 2h ago, promised within 15m',
    '  pipeline "bank": last run 7 failed 5m ago: sink answered 503',
    '  pipeline "prices": last run 3 paged 1m ago: buffer full (10000 records): paged',
  ]);
  assert.equal(segOf(lines, /catalog" is stale/, "is stale").color, "red");
  // On a short terminal the section keeps its share and says how many more.
  const short = overviewLines({
    overview: { now: NOW, ...state.overview, pipelineAttention },
    cursor: 0,
    width: 80,
    height: 20,
    now: NOW,
  }).map(plain);
  assert.equal(short.at(-1), "  … 2 more");
});

Deno.test("stored text of a pipeline is shown escaped: no control character reaches the terminal", () => {
  const evil = "\x1b[2J\x1b]0;owned\x07";
  const view = fixturePipeline({
    id: `p${evil}`,
    runs: 1,
    recent: [fixtureIngestRun({
      id: 1,
      state: "failed",
      error: `e${evil}`,
      counts: {
        received: 1,
        kept: 0,
        sunk: 0,
        dropped: { [`r${evil}`]: 1 },
        failed: 0,
        pending: 0,
      },
    })],
    droppedLastHour: { [`r${evil}`]: 1 },
    freshness: {
      mode: "advisory",
      withinMs: null,
      authority: `a${evil}`,
      lastCompletedAt: null,
      ageMs: null,
      stale: false,
    },
  });
  const frames = [
    ...pane(view),
    ...frameOf(<PipelinesList {...listProps({ pipelines: [view], cursor: 0 })} />, 80),
  ];
  for (const line of frames) {
    assert.ok(!line.includes("\x1b") && !line.includes("\x07"), JSON.stringify(line));
  }
  assert.match(frames.join("\n"), /pipeline p\\x1b\[2J\\x1b\]0;owned\\x07/);
  assert.match(frames.join("\n"), /error: e\\x1b\[2J/);
});
