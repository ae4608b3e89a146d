/**
 * The `sources:` and `pipelines:` sections of `schedules.yaml`, and
 * schedules that run a pipeline: every rule of `checkPipeline` is an error
 * of the file with its code, line and field; a valid file's pipelines are
 * compiled onto the config with their paths resolved against the file's
 * folder; a schedule's occurrence becomes a `jobs.ingest` job carrying the
 * compiled pipeline; `jobs check` shows the steps in run order.
 */

import assert from "node:assert/strict";
import { type ConfigError, parseSchedules } from "../../src/config/load.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import type { ScheduleConfig } from "../../src/config/types.ts";
import { type IngestJobArgs } from "../../src/ingest/types.ts";
import { INGEST_WORKER } from "../../src/kernel/runs.ts";
import { runJobs, withFiles } from "../support/cli.ts";

function yaml(...lines: string[]): string {
  return lines.join("\n") + "\n";
}

function parsed(text: string, path = "/srv/feeds/schedules.yaml"): ScheduleConfig {
  const result = parseSchedules(text, path);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  return result.config;
}

function errors(text: string): ConfigError[] {
  const result = parseSchedules(text, "schedules.yaml");
  if (result.ok) assert.fail("expected errors, the file parsed");
  return result.errors;
}

/** `code line:column field` of each error. */
function brief(all: ConfigError[]): string[] {
  return all.map((e) => `${e.code} ${e.line}:${e.column} ${e.field ?? ""}`);
}

/** The issue's shape, line numbers used below. */
const ISSUE = [
  "version: 1",
  "sources:",
  "  vendor-prices: { file: ./prices.json }",
  "pipelines:",
  "  - id: catalog",
  "    source: { file: ./feed.ndjson, format: ndjson }",
  "    key: sku",
  "    steps:",
  "      - drop: drop-duplicates",
  '        run: { command: ["./steps/dedupe"] }',
  "      - enrich: enrich-prices",
  "        sources: [vendor-prices]",
  "        run: { worker: enrich_prices }",
  "      - drop: drop-below-threshold",
  '        run: { command: ["./steps/threshold", "10"] }',
  "    drop_reasons: [duplicate, below-threshold, poison]",
  "    buffer: { capacity: 10000, overflow: block }",
  "    poison_after: 3",
  '    sink: { command: ["./bin/upsert-product"] }',
  "    freshness: { mode: bounded, within: 15m }",
];

const SCHEDULE = [
  "schedules:",
  "  - id: catalog-sync",
  "    every: 15m",
  "    run: { pipeline: catalog }",
];

Deno.test("the issue's pipeline parses and compiles with the file's folder as its base", () => {
  const config = parsed(yaml(...ISSUE, ...SCHEDULE));
  assert.equal(config.pipelines.length, 1);
  const p = config.pipelines[0]!;
  assert.equal(p.id, "catalog");
  assert.deepEqual(p.source, {
    kind: "file",
    path: "/srv/feeds/feed.ndjson",
    format: "ndjson",
    encoding: "utf-8",
  });
  assert.deepEqual(p.key, ["sku"]);
  assert.deepEqual(p.steps.map((s) => `${s.mark} ${s.name}`), [
    "drop drop-duplicates",
    "enrich enrich-prices",
    "drop drop-below-threshold",
  ]);
  const dedupe = p.steps[0]!.run;
  assert.equal(dedupe.kind, "command");
  if (dedupe.kind === "command") assert.equal(dedupe.cwd, "/srv/feeds");
  assert.deepEqual(p.steps[1]!.sources, ["vendor-prices"]);
  assert.deepEqual(p.sources["vendor-prices"], { kind: "file", path: "/srv/feeds/prices.json" });
  assert.deepEqual(p.dropReasons, ["duplicate", "below-threshold", "poison"]);
  assert.deepEqual(p.buffer, { capacity: 10000, overflow: "block" });
  assert.equal(p.poisonAfter, 3);
  assert.deepEqual(p.freshness, { mode: "bounded", withinMs: 900_000 });

  const schedule = config.schedules[0]!;
  assert.equal(schedule.queue, p.queue);
  const job = occurrenceJob(schedule, {
    at: 0,
    occurrence: "catalog-sync@1970-01-01T00:00:00.000Z",
  } as never);
  assert.equal(job.worker, INGEST_WORKER);
  const args = JSON.parse(job.args) as IngestJobArgs;
  assert.equal(args.kind, "ingest");
  assert.equal(args.pipeline.id, "catalog");
  assert.equal(args.pipeline.hash, p.hash);
});

Deno.test("an ISO duration and a source glob are accepted", () => {
  const lines = [...ISSUE];
  lines[5] = "    source: { file: ./feeds/*.csv, format: csv }";
  lines[19] = "    freshness: { mode: bounded, within: PT15M }";
  const p = parsed(yaml(...lines)).pipelines[0]!;
  assert.equal(p.source.kind, "glob");
  assert.deepEqual(p.freshness, { mode: "bounded", withinMs: 900_000 });
});

Deno.test("jobs check names each broken pipeline rule by code, line and field", () => {
  const noReasons = ISSUE.filter((line) => !line.includes("drop_reasons"));
  assert.deepEqual(
    brief(errors(yaml(...noReasons))).map((e) => e.split(" ")[0]),
    ["drop-reasons-missing"],
  );
  const missing = errors(yaml(...noReasons))[0]!;
  assert.equal(missing.line, 5);
  assert.match(missing.message, /pipeline "catalog"/);

  const unmarked = [...ISSUE];
  unmarked[8] = "      - name: drop-duplicates";
  const e1 = errors(yaml(...unmarked));
  assert.ok(e1.some((e) => e.code === "step-unmarked" && e.line === 9), brief(e1).join("\n"));

  const undeclared = [...ISSUE];
  undeclared[11] = "        sources: [vendor-pricez]";
  const [e2] = errors(yaml(...undeclared));
  assert.equal(e2!.code, "source-undeclared");
  assert.equal(e2!.line, 12);
  assert.match(e2!.message, /vendor-pricez/);

  const overflow = [...ISSUE];
  overflow[16] = "    buffer: { capacity: 10000, overflow: drop_oldest }";
  const [e3] = errors(yaml(...overflow));
  assert.equal(e3!.code, "overflow-reason-missing");
  assert.ok(e3!.line === 16 || e3!.line === 17, brief([e3!]).join());

  const poison = [...ISSUE];
  poison[15] = "    drop_reasons: [duplicate, below-threshold]";
  const [e4] = errors(yaml(...poison));
  assert.equal(e4!.code, "poison-reason-missing");
  assert.equal(e4!.line, 16);
});

Deno.test("a schedule naming no pipeline of the file is refused with a suggestion", () => {
  const lines = [...ISSUE, ...SCHEDULE];
  lines[lines.length - 1] = "    run: { pipeline: catalgo }";
  const [e] = errors(yaml(...lines));
  assert.equal(e!.code, "pipeline-unknown");
  assert.equal(e!.line, lines.length);
  assert.match(e!.message, /catalog/);
});

Deno.test("a source with two kinds, or a query without a database, is refused", () => {
  const lines = [...ISSUE];
  lines[2] = "  vendor-prices: { file: ./prices.json, sqlite: ./p.db }";
  assert.deepEqual(errors(yaml(...lines)).map((e) => e.code), ["source-invalid"]);
  lines[2] = "  vendor-prices: { sqlite: ./p.db }";
  const [e] = errors(yaml(...lines));
  assert.equal(e!.code, "source-invalid");
  assert.match(e!.message, /query/);
});

Deno.test("duplicate pipeline ids are refused with the first line", () => {
  const again = ISSUE.slice(4);
  const all = errors(yaml(...ISSUE, ...again));
  assert.ok(
    all.some((e) => e.code === "duplicate-id" && /line 5/.test(e.message)),
    brief(all).join(),
  );
});

Deno.test("jobs check prints the steps in run order, and the errors with file:line", async () => {
  const now = Date.UTC(2026, 11, 3);
  await withFiles(yaml(...ISSUE, ...SCHEDULE), async ({ config }) => {
    const ok = await runJobs(["check", "--config", config], { now });
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /1 pipeline/);
    assert.match(
      ok.out,
      /pipeline catalog: 1\. drop drop-duplicates -> 2\. enrich enrich-prices \(reads vendor-prices\) -> 3\. drop drop-below-threshold -> sink/,
    );
    const json = await runJobs(["check", "--json", "--config", config], { now });
    const body = JSON.parse(json.out);
    assert.deepEqual(body.pipelines[0].steps.map((s: { mark: string }) => s.mark), [
      "drop",
      "enrich",
      "drop",
    ]);
  });
  const noReasons = ISSUE.filter((line) => !line.includes("drop_reasons"));
  await withFiles(yaml(...noReasons), async ({ config }) => {
    const bad = await runJobs(["check", "--config", config], { now });
    assert.notEqual(bad.code, 0);
    assert.match(bad.err + bad.out, /schedules\.yaml:5:\d+.*drop-reasons-missing/);
  });
});
