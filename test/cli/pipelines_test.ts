/**
 * The ingest commands end to end through the command line, on both stores:
 * `jobs ingest <pipeline> --wait --json` runs a pipeline of the schedules
 * file to the end in this process (TypeScript steps and sink from the
 * file's `workers:` module) and prints its counts; `jobs pipelines --json`
 * shows the run, the drops per reason and the freshness; `jobs drops`
 * lists the drops by reason and run; `jobs drops replay <id> --reason`
 * runs one record again through the file's definition (audited, once);
 * `jobs ingest` without `--wait` only enqueues.
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../support/backends.ts";
import { runJobs, withFiles } from "../support/cli.ts";

const NOW = Date.UTC(2026, 11, 3, 9);
const ENV = { USER: "ada" };
const INGEST = new URL("../../src/ingest.ts", import.meta.url).href;

/** A dedupe and a threshold step, and a sink that appends each key to `$SINK_OUT`. */
const WORKERS = `
import { defineSink, defineStep } from "${INGEST}";
const seen = new Map();
export const dedupe = defineStep({
  name: "dedupe",
  run(record, ctx) {
    let keys = seen.get(ctx.run);
    if (!keys) seen.set(ctx.run, keys = new Set());
    if (keys.has(record.sku)) return { drop: "duplicate" };
    keys.add(record.sku);
    return { keep: true };
  },
});
export const threshold = defineStep({
  name: "threshold",
  run: (record) => record.qty < Number(Deno.env.get("MIN_QTY") ?? 10)
    ? { drop: "below-threshold" }
    : { keep: true },
});
export const collect = defineSink({
  name: "collect",
  async write(batch) {
    await Deno.writeTextFile(Deno.env.get("SINK_OUT"), batch.map((b) => b.key + "\\n").join(""), { append: true });
  },
});
`;

const SCHEDULES = `version: 1
workers: ./workers.ts
pipelines:
  - id: catalog
    source: { file: ./feed.ndjson, format: ndjson }
    key: sku
    steps:
      - drop: drop-duplicates
        run: { worker: dedupe }
      - drop: drop-below-threshold
        run: { worker: threshold }
    drop_reasons: [duplicate, below-threshold, poison]
    buffer: { capacity: 100, overflow: block }
    sink: { worker: collect }
    freshness: { mode: bounded, within: 15m }
schedules: []
`;

const FEED = [
  { sku: "a", qty: 20 },
  { sku: "b", qty: 30 },
  { sku: "a", qty: 20 },
  { sku: "c", qty: 2 },
  { sku: "d", qty: 15 },
].map((r) => JSON.stringify(r)).join("\n") + "\nnot json\n";

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: jobs ingest --wait, pipelines, drops and drops replay`, async () => {
    const h = await backend.open(NOW);
    try {
      await withFiles(SCHEDULES, async ({ dir, config }) => {
        await Deno.writeTextFile(`${dir}/workers.ts`, WORKERS);
        await Deno.writeTextFile(`${dir}/feed.ndjson`, FEED);
        const sinkOut = `${dir}/sunk.txt`;
        await Deno.writeTextFile(sinkOut, "");
        Deno.env.set("SINK_OUT", sinkOut);
        const run = (args: string[], now = NOW) =>
          runJobs([...args, "--db", h.location], { now, env: ENV });

        const ran = await run(["ingest", "catalog", "--wait", "--json", "--config", config]);
        assert.equal(ran.code, 0, ran.err);
        const result = JSON.parse(ran.out);
        assert.equal(result.state, "completed");
        assert.equal(result.ranBy, "here");
        assert.deepEqual(
          {
            received: result.received,
            sunk: result.sunk,
            dropped: result.dropped,
            failed: result.failed,
            pending: result.pending,
          },
          {
            received: 6,
            sunk: 3,
            dropped: { duplicate: 1, "below-threshold": 1 },
            failed: 1,
            pending: 0,
          },
        );
        assert.deepEqual(
          (await Deno.readTextFile(sinkOut)).trim().split("\n"),
          ["catalog/a", "catalog/b", "catalog/d"],
        );

        // The listing: the run with its counts, drops per reason, fresh.
        const listed = await run(["pipelines", "--json", "--config", config], NOW + 60_000);
        assert.equal(listed.code, 0, listed.err);
        const [view] = JSON.parse(listed.out);
        assert.equal(view.id, "catalog");
        assert.equal(view.runs, 1);
        assert.equal(view.recent[0].id, result.run);
        assert.equal(view.recent[0].sunk, 3);
        assert.deepEqual(view.droppedLastHour, { duplicate: 1, "below-threshold": 1 });
        assert.equal(view.freshness.stale, false);
        const text = await run(["pipelines", "--config", config], NOW + 60_000);
        assert.match(text.out, /pipeline catalog: fresh/);
        assert.match(
          text.out,
          /dropped last hour: below-threshold 1, duplicate 1 \(2\)|duplicate 1, below-threshold 1 \(2\)/,
        );
        // Sixteen minutes later the bounded promise is broken.
        const late = await run(["pipelines", "--json", "--config", config], NOW + 16 * 60_000);
        assert.equal(JSON.parse(late.out)[0].freshness.stale, true);
        const status = await run(["status", "--config", config], NOW + 16 * 60_000);
        assert.match(status.out, /pipeline catalog: STALE/);

        // The drops, by reason and by run.
        const drops = await run(["drops", "catalog", "--json"]);
        assert.equal(drops.code, 0, drops.err);
        const all = JSON.parse(drops.out);
        assert.deepEqual(all.map((d: { reason: string }) => d.reason).sort(), [
          "below-threshold",
          "duplicate",
        ]);
        const low = JSON.parse(
          (await run(["drops", "catalog", "--reason", "below-threshold", "--json"])).out,
        );
        assert.equal(low.length, 1);
        assert.equal(low[0].recordKey, "c");
        assert.equal(low[0].step, "drop-below-threshold");
        const byRun = JSON.parse(
          (await run(["drops", "catalog", "--run", String(result.run), "--json"])).out,
        );
        assert.equal(byRun.length, 2);
        const table = await run(["drops", "catalog"]);
        assert.match(table.out, /below-threshold\s+drop-below-threshold/);

        // The fix: a lower threshold; the replay runs record c through it, once.
        Deno.env.set("MIN_QTY", "1");
        const refused = await run(["drops", "replay", String(low[0].id), "--config", config]);
        assert.notEqual(refused.code, 0);
        assert.match(refused.err, /--reason/);
        const replayed = await run([
          "drops",
          "replay",
          String(low[0].id),
          "--reason",
          "threshold lowered",
          "--json",
          "--config",
          config,
        ]);
        assert.equal(replayed.code, 0, replayed.err);
        const { job } = JSON.parse(replayed.out);
        const again = await run([
          "drops",
          "replay",
          String(low[0].id),
          "--reason",
          "twice",
          "--config",
          config,
        ]);
        assert.notEqual(again.code, 0);
        assert.match(again.err, new RegExp(`already replayed by job ${job}`));
        // Nothing serves the queue, so the replay waits; a run --wait takes both jobs.
        const second = await run(["ingest", "catalog", "--wait", "--json", "--config", config]);
        assert.equal(second.code, 0, second.err);
        const sunk = (await Deno.readTextFile(sinkOut)).trim().split("\n");
        assert.ok(sunk.includes("catalog/c"), sunk.join(","));
        const shown = await run(["show", String(job), "--json"]);
        assert.equal(JSON.parse(shown.out).job.state, "completed", shown.out);

        // Without --wait: enqueued only, the id on stdout.
        const queued = await run(["ingest", "catalog", "--config", config]);
        assert.equal(queued.code, 0, queued.err);
        assert.match(queued.out, /^\d+$/);
        assert.match(queued.err, /no live daemon serves the queue/);

        const unknown = await run(["ingest", "catalgo", "--config", config]);
        assert.equal(unknown.code, 2);
        assert.match(unknown.err, /no pipeline "catalgo".*did you mean "catalog"/);
      });
    } finally {
      Deno.env.delete("SINK_OUT");
      Deno.env.delete("MIN_QTY");
      await h.close();
    }
  });
}
