/**
 * The incident the runbook exists for: an occurrence fails, the operator
 * fixes `schedules.yaml` (the daemon logs `config.reloaded`), replays the
 * occurrence, and the fixed command runs, not the one it was planned with.
 * `jobs show` then says which definition each attempt ran.
 */

import assert from "node:assert/strict";
import { definitionHash } from "../../src/schedule/plan.ts";
import { waitUntil } from "../../src/testing.ts";
import { scheduleOf } from "../support/schedules.ts";
import { withStore } from "../support/stores.ts";
import { daemonDir, jobsCommand, readLines, startDaemon } from "../support/daemon_process.ts";

function file(ledger: string, marker: string, exit: number): string {
  const argv = ["sh", "-c", `echo ${marker} >> "$1"; exit ${exit}`, "sh", ledger];
  return `version: 1
schedules:
  - id: feed
    cron: "0 3 * * *"
    max_attempts: 1
    run:
      command: ${JSON.stringify(argv)}
`;
}

Deno.test({
  name: "replay after fixing schedules.yaml runs the fixed command; --as-planned runs the old one",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    await Deno.writeTextFile(config, file(ledger, "broken", 1));
    await using daemon = await startDaemon({ db, config, node: "replay-node" });

    const ran = await jobsCommand(["run", "feed", "--db", db, "--config", config]);
    assert.equal(ran.code, 0, ran.stderr);
    const occurrence = ran.stdout.match(/feed@\S+Z/)?.[0];
    assert.ok(occurrence, ran.stdout);
    await waitUntil(
      "the broken run to be discarded",
      () =>
        withStore(
          db,
          async (store) => (await store.jobsList({ occurrence }))[0]?.state === "discarded",
        ),
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );

    // The fix: saved, and picked up by the running daemon.
    await Deno.writeTextFile(config, file(ledger, "fixed", 0));
    await daemon.waitFor("config.reloaded");

    const replayed = await jobsCommand([
      "replay",
      occurrence,
      "--reason",
      "fixed the feed command",
      "--db",
      db,
      "--config",
      config,
    ]);
    assert.equal(replayed.code, 0, replayed.stderr);
    const fixedHash = definitionHash(scheduleOf(
      JSON.parse(JSON.stringify({
        id: "feed",
        cron: "0 3 * * *",
        max_attempts: 1,
        run: { command: ["sh", "-c", `echo fixed >> "$1"; exit 0`, "sh", ledger] },
      })),
    ));
    assert.match(replayed.stdout, new RegExp(`runs the live definition ${fixedHash.slice(0, 12)}`));
    assert.match(replayed.stdout, /args\.argv: .*broken.* -> .*fixed/);

    await waitUntil(
      "the replay to complete",
      () =>
        withStore(
          db,
          async (store) => (await store.jobsList({ occurrence }))[0]?.state === "completed",
        ),
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    assert.deepEqual(await readLines(ledger), ["broken", "fixed"]);

    const shown = await jobsCommand(["show", occurrence, "--db", db, "--json"]);
    assert.equal(shown.code, 0, shown.stderr);
    const attempts = JSON.parse(shown.stdout).attempts as { kind: string; definition: string }[];
    assert.equal(attempts.length, 2);
    assert.deepEqual(attempts.map((a) => a.kind), ["run", "replay"]);
    assert.notEqual(attempts[0]!.definition, attempts[1]!.definition);
    assert.equal(attempts[1]!.definition, fixedHash);
    const text = await jobsCommand(["show", occurrence, "--db", db]);
    assert.match(text.stdout, new RegExp(`definition ${fixedHash.slice(0, 12)}`));

    // --as-planned keeps the job's definition: now the fixed one it was rewritten to.
    const kept = await jobsCommand([
      "replay",
      occurrence,
      "--reason",
      "once more",
      "--as-planned",
      "--db",
      db,
    ]);
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(kept.stdout, /runs as planned \(definition [\w-]{12}\): --as-planned/);
    await daemon.stop();
  },
});
