/**
 * The worked catalog example (`examples/catalog/`, copied to a temp folder)
 * run by a real `jobs daemon`: `jobs ingest catalog --wait --json` waits
 * for the daemon's run and prints its counts; `jobs run catalog-sync` (the
 * schedule's occurrence) runs the pipeline too; the third run of the feed
 * drops the two malformed lines as `poison`; `jobs drops replay` runs one
 * dropped record again through the daemon; `/metrics` counts records and
 * drops by reason and says the pipeline is fresh.
 */

import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, jobsCommand, POLL, startDaemon } from "../support/daemon_process.ts";
import { parseProm, value } from "../http/prom.ts";

const EXAMPLE = fileURLToPath(new URL("../../examples/catalog", import.meta.url));
const SRC = new URL("../../src/", import.meta.url).href;

Deno.test({
  name:
    "jobs daemon runs the catalog example: ingest --wait, the schedule's run, poison on the third, a replay, /metrics",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const folder = `${dir.path}/catalog`;
    await cp(EXAMPLE, folder, { recursive: true, filter: (src: string) => !src.includes("/out") });
    // The copy's workers module imports the library from this checkout.
    const workers = await Deno.readTextFile(`${folder}/workers.ts`);
    await Deno.writeTextFile(
      `${folder}/workers.ts`,
      workers.replace(/from "\.\.\/\.\.\/src\//g, `from "${SRC}`),
    );
    const file = `${folder}/schedules.yaml`;
    // The schedule runs when told (jobs run): an occurrence of its 15-minute
    // rhythm falling inside the test would be one more run of the feed.
    const yaml = await Deno.readTextFile(file);
    assert.match(yaml, /every: 15m/);
    await Deno.writeTextFile(file, yaml.replace("every: 15m", "every: 1000d"));
    const { db } = dir;
    const check = await jobsCommand(["check", "--config", file]);
    assert.equal(check.code, 0, check.stderr);

    await using daemon = await startDaemon({
      db,
      config: file,
      node: "ing1",
      args: ["--listen", "127.0.0.1:0"],
    });
    const ingest = async () => {
      const ran = await jobsCommand([
        "ingest",
        "catalog",
        "--wait",
        "--json",
        "--db",
        db,
        "--config",
        file,
      ]);
      return { code: ran.code, stderr: ran.stderr, result: JSON.parse(ran.stdout) };
    };
    const first = await ingest();
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(first.result.ranBy, ["ing1"]);
    assert.match(first.stderr, /waiting for the run of ing1/);
    assert.deepEqual(
      [first.result.received, first.result.sunk, first.result.failed, first.result.pending],
      [40, 29, 2, 0],
    );
    assert.deepEqual(first.result.dropped, { duplicate: 4, "below-threshold": 5 });
    const products = JSON.parse(await Deno.readTextFile(`${folder}/out/products.json`));
    assert.equal(Object.keys(products).length, 29);

    // The schedule's occurrence: a second run, by the daemon.
    const occurrence = await jobsCommand(["run", "catalog-sync", "--db", db, "--config", file]);
    assert.equal(occurrence.code, 0, occurrence.stderr);
    const runs = async () => {
      const listed = await jobsCommand(["pipelines", "--json", "--db", db, "--config", file]);
      return JSON.parse(listed.stdout)[0].recent as Array<
        { id: number; state: string; trigger: string; failed: number; dropped: object }
      >;
    };
    const scheduled = await waitUntil("the schedule's run completed", async () => {
      const run = (await runs()).find((r) => r.trigger === "schedule");
      return run?.state === "completed" ? run : null;
    }, { ...POLL, timeoutMs: 60_000 });
    assert.equal(scheduled.failed, 2);

    // The third run of the feed: the malformed lines failed twice before, now poison.
    const third = await ingest();
    assert.equal(third.code, 0, third.stderr);
    assert.deepEqual(third.result.dropped, { duplicate: 4, "below-threshold": 5, poison: 2 });
    assert.equal(third.result.failed, 0);

    // A replay of one below-threshold record: its price is still below, dropped again.
    const drops = await jobsCommand([
      "drops",
      "catalog",
      "--reason",
      "below-threshold",
      "--run",
      String(first.result.run),
      "--json",
      "--db",
      db,
    ]);
    const [drop] = JSON.parse(drops.stdout);
    const replay = await jobsCommand([
      "drops",
      "replay",
      String(drop.id),
      "--reason",
      "checking the fix",
      "--db",
      db,
      "--config",
      file,
    ]);
    assert.equal(replay.code, 0, replay.stderr);
    const replayed = await waitUntil("the replay run completed", async () => {
      const run = (await runs()).find((r) => r.trigger === "replay");
      return run?.state === "completed" ? run : null;
    }, { ...POLL, timeoutMs: 60_000 });
    assert.deepEqual(replayed.dropped, { "below-threshold": 1 });

    // The daemon's counters: four runs' records and drops by reason; fresh.
    const started = await daemon.waitFor("daemon.started");
    const page = await (await fetch(`http://${started.listen}/metrics`)).text();
    const metrics = parseProm(page);
    assert.equal(
      value(metrics, "jobs_ingest_records_total", { pipeline: "catalog", outcome: "received" }),
      121,
    );
    assert.equal(
      value(metrics, "jobs_ingest_dropped_total", { pipeline: "catalog", reason: "poison" }),
      2,
    );
    assert.equal(
      value(metrics, "jobs_ingest_dropped_total", {
        pipeline: "catalog",
        reason: "below-threshold",
      }),
      16,
    );
    assert.equal(value(metrics, "jobs_ingest_stale", { pipeline: "catalog" }), 0);

    const stopped = await daemon.stop();
    assert.equal(stopped.code, 0, daemon.log());
  },
});
