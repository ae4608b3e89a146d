/**
 * `jobs enqueue <worker>`: one job, validated as the library validates it, of
 * a worker some daemon of this configuration defines.
 */

import assert from "node:assert/strict";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };
const MOD = new URL("../../src/mod.ts", import.meta.url).href;
const SCHEDULES = `version: 1
workers: ./workers.ts
schedules:
  - id: greet-all
    every: 1h
    run: { worker: greet }
`;
const WORKERS = `import { defineWorker } from "${MOD}";
export const greet = defineWorker({ name: "greet", perform: () => {} });
export const reindexSearch = defineWorker({ name: "reindex-search", perform: () => {} });
`;

Deno.test("jobs enqueue prints the id, a duplicate's id, and names bad options", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    // Workers another process defines: --force, so only the options are checked.
    const run = (args: string[]) =>
      runJobs(["enqueue", ...args, "--db", db, "--force"], { now: NOW, env: ENV });
    const ok = await run([
      "send",
      "--args",
      '{"to":"a@example.com"}',
      "--queue",
      "mail",
      "--tag",
      "x",
      "--tag",
      "y",
      "--in",
      "15m",
    ]);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /^enqueued job (\d+): send on queue mail, scheduled$/);
    const id = Number(ok.out.match(/job (\d+)/)![1]);
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id });
      assert.deepEqual([job?.args, job?.tags, job?.scheduledAt], [
        { to: "a@example.com" },
        ["x", "y"],
        NOW + 15 * 60_000,
      ]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.details]), [
        ["job.enqueue", "ada", { worker: "send", queue: "mail", duplicate: false }],
      ]);
    });

    const first = await run(["dedupe", "--args", '{"n":1}', "--unique"]);
    const dup = await run(["dedupe", "--args", '{"n":1}', "--unique"]);
    const firstId = first.out.match(/job (\d+)/)![1];
    assert.match(dup.out, new RegExp(`^duplicate of ${firstId}: job ${firstId} \\(available`));

    const cases: [string[], RegExp][] = [
      [
        ["send", "--args", '{"to":'],
        /--args <json>" argument "\{"to":" is invalid\. .* is not JSON/,
      ],
      [["send", "--priority", "12"], /"12" is not a whole number from 0 to 9/],
      [["send", "--max-attempts", "0"], /"0" is not a whole number from 1 to 1000000/],
      [["send", "--in", "5x"], /"--in <duration>" argument "5x" is invalid/],
      [["send", "--at", "tomorrow"], /"--at <instant>" argument "tomorrow" is invalid/],
      [["send", "--in", "1m", "--at", "2026-06-01T10:00:00Z"], /give "in" or "at", not both/],
      [["send", "--queue", "no spaces"], /queue must be .*, got "no spaces"/],
      [["send", "--meta", "[1]"], /--meta must be a JSON object/],
      [
        ["send", "--unique-by", "nothing"],
        /--unique-by "nothing" must be args, worker or keys:a,b/,
      ],
    ];
    for (const [args, message] of cases) {
      const bad = await run(args);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.err}`);
      assert.match(bad.err, message);
      assert.match(bad.err, /^jobs enqueue: /);
    }
    await withStore(db, async (store) => assert.equal((await store.jobsList({})).length, 2));
  });
});

Deno.test("jobs enqueue refuses a worker no daemon of this configuration defines, naming the known ones", async () => {
  await withFiles(SCHEDULES, async ({ dir, db, config }) => {
    await Deno.writeTextFile(`${dir}/workers.ts`, WORKERS);
    const run = (args: string[]) =>
      runJobs(["enqueue", ...args, "--db", db, "--config", config], { now: NOW, env: ENV });

    const typo = await run(["gret"]);
    assert.equal(typo.code, 1);
    assert.equal(
      typo.err,
      `jobs enqueue: no daemon of this configuration defines worker "gret"; known: "greet", ` +
        `"jobs.command", "jobs.fanout", "jobs.http", "reindex-search" (--force enqueues it ` +
        `anyway, for a worker another process defines); did you mean "greet"?`,
    );
    // Refused before anything is written: not even the store is created.
    await assert.rejects(Deno.stat(db), Deno.errors.NotFound);

    for (const worker of ["greet", "reindex-search", "jobs.command"]) {
      const known = await run([worker]);
      assert.equal(known.code, 0, `${worker}: ${known.err}`);
    }
    const elsewhere = await run(["mailer", "--force"]);
    assert.equal(elsewhere.code, 0, elsewhere.err);
    // A worker jobs in the store already use is known from then on.
    const again = await run(["mailer"]);
    assert.equal(again.code, 0, again.err);
    const near = await run(["mailr"]);
    assert.equal(near.code, 1);
    assert.match(near.err, /known: .*"mailer".*; did you mean "mailer"\?$/);

    const hostile = await run(["bad\x1b[2Jname", "--force"]);
    assert.equal(hostile.code, 2);
    assert.equal(
      hostile.err,
      `jobs enqueue: worker "bad\\x1b[2Jname" is not a printable identifier: 1-128 letters, ` +
        `digits or ._:/- starting with a letter or digit`,
    );
    await withStore(db, async (store) => {
      assert.deepEqual((await store.jobsList({})).map((j) => j.worker), [
        "greet",
        "reindex-search",
        "jobs.command",
        "mailer",
        "mailer",
      ]);
    });
  });
});
