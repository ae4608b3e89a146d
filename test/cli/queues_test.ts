/**
 * `jobs pause | resume <queue>`: for every process on the store, audited, and
 * only for a queue someone knows of.
 */

import assert from "node:assert/strict";
import { runJobs, seedJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };
const SCHEDULES = `version: 1
queues:
  mail: { concurrency: 2 }
schedules:
  - id: nightly
    cron: "0 3 * * *"
    queue: reports
    run: { command: ["true"] }
`;

Deno.test("jobs pause and resume change the queue for every process and are audited", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[], now: number) =>
      runJobs([...args, "--db", db, "--config", config], { now, env: ENV });
    const paused = await run(["pause", "mail", "--reason", "provider outage"], NOW);
    assert.equal(paused.code, 0, paused.err);
    assert.match(paused.out, /^queue mail paused for every process/);
    const again = await run(["pause", "mail"], NOW + 1);
    assert.match(again.out, /already paused/);
    const resumed = await run(["resume", "mail", "--actor", "grace", "--json"], NOW + 2);
    assert.equal(resumed.code, 0, resumed.err);
    assert.deepEqual(JSON.parse(resumed.out), { queue: "mail", paused: false, was: true, db });

    await withStore(db, async (store) => {
      assert.deepEqual((await store.queuesList()).map((q) => [q.name, q.paused]), [[
        "mail",
        false,
      ]]);
      const audit = await store.auditList({ target: "queue:mail" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason]), [
        ["queue.pause", "ada", "provider outage"],
        ["queue.pause", "ada", null],
        ["queue.resume", "grace", null],
      ]);
    });
  });
});

Deno.test("jobs pause refuses a queue nobody knows of, suggests the nearest, and --create insists", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await seedJobs(db, NOW, [{ queue: "webhooks" }]);
    const run = (args: string[]) =>
      runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV });

    const typo = await run(["pause", "mial"]);
    assert.equal(typo.code, 1);
    assert.equal(
      typo.err,
      `jobs pause: no queue "mial" is declared in ${config}, used by a job or served by a node ` +
        `(--create pauses it anyway); did you mean "mail"?`,
    );
    const resumeTypo = await run(["resume", "webhoks"]);
    assert.equal(resumeTypo.code, 1);
    assert.match(resumeTypo.err, /did you mean "webhooks"\?/);
    await withStore(db, async (store) => assert.deepEqual(await store.queuesList(), []));

    // Known from the file's queues, its schedules' queues, and the jobs in the store.
    for (const queue of ["mail", "reports", "webhooks"]) {
      const known = await run(["pause", queue]);
      assert.equal(known.code, 0, `${queue}: ${known.err}`);
    }
    const created = await run(["pause", "fresh", "--create", "--reason", "before the deploy"]);
    assert.equal(created.code, 0, created.err);
    // Once stored, the queue is known: resuming it needs no --create.
    const back = await run(["resume", "fresh"]);
    assert.equal(back.code, 0, back.err);
    await withStore(db, async (store) => {
      assert.deepEqual((await store.queuesList()).map((q) => [q.name, q.paused]), [
        ["fresh", false],
        ["mail", true],
        ["reports", true],
        ["webhooks", true],
      ]);
    });
  });
});

Deno.test("jobs pause and resume never create a store at a mistyped --db", async () => {
  await withFiles(SCHEDULES, async ({ dir, config }) => {
    for (const command of ["pause", "resume"]) {
      const missing = `${dir}/jobs.bd`;
      const r = await runJobs([command, "mail", "--db", missing, "--config", config], {
        now: NOW,
        env: ENV,
      });
      assert.equal(r.code, 1);
      assert.equal(
        r.err,
        `jobs ${command}: no file "${missing}" for the store (from --db); a daemon creates it when it ` +
          `starts, or run: jobsctl migrate --db ${missing}`,
      );
      await assert.rejects(Deno.stat(missing), Deno.errors.NotFound);
    }
  });
});

Deno.test("jobs queues set stores a queue's flow limits for every node, audited; none removes one", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[], now: number) =>
      runJobs([...args, "--db", db, "--config", config], { now, env: ENV });
    const set = await run(
      ["queues", "set", "mail", "--global", "3", "--rate", "100/1m:10", "--reason", "provider cap"],
      NOW,
    );
    assert.equal(set.code, 0, set.err);
    assert.match(
      set.out,
      /^queue mail: global 3, rate 100 per 60000ms, burst 10, for every node on .* from its next claim \(was: none stored/,
    );
    const lowered = await run(
      ["queues", "set", "mail", "--global", "none", "--partition-limit", "2", "--json"],
      NOW + 1,
    );
    assert.equal(lowered.code, 0, lowered.err);
    assert.deepEqual(JSON.parse(lowered.out).limits, {
      global: null,
      partitionLimit: 2,
      rate: { limit: 100, perMs: 60_000, burst: 10 },
    });
    await withStore(db, async (store) => {
      const [row] = await store.queueLimitsList();
      assert.deepEqual([row!.name, row!.global, row!.partitionLimit], ["mail", null, 2]);
      const audit = await store.auditList({ target: "queue:mail" });
      assert.deepEqual(audit.map((a) => [a.action, a.reason]), [
        ["queue.limits", "provider cap"],
        ["queue.limits", null],
      ]);
    });

    const bad = await run(["queues", "set", "mail", "--global", "0"], NOW + 2);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--global <n>.*"0" must be a whole number of at least 1, or none/);
    const badRate = await run(["queues", "set", "mail", "--rate", "100 a minute"], NOW + 2);
    assert.equal(badRate.code, 2);
    assert.match(badRate.err, /"100 a minute" must be <limit>\/<period>\[:<burst>\]/);
    const nothing = await run(["queues", "set", "mail"], NOW + 2);
    assert.equal(nothing.code, 2);
    assert.match(nothing.err, /give --global, --partition-limit or --rate/);
    const unknown = await run(["queues", "set", "mial", "--global", "1"], NOW + 2);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /did you mean "mail"\?/);
  });
});

Deno.test("jobs queues lists the limits the file declares and those stored", async () => {
  const file = SCHEDULES.replace(
    "  mail: { concurrency: 2 }",
    "  mail: { concurrency: 2, global: 4, partition: { by: args.account, limit: 1 } }",
  );
  await withFiles(file, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[]) =>
      runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV });
    assert.equal((await run(["queues", "set", "mail", "--global", "2"])).code, 0);
    const listed = await run(["queues"]);
    assert.equal(listed.code, 0, listed.err);
    assert.equal(
      listed.out.trim(),
      "mail: file global 4, partition by args.account limit 1; stored global 2",
    );
  });
});
