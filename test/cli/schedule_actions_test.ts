/**
 * `jobs run` and `jobs disable | enable`: a schedule run now as the planner
 * builds it, guarded where the file says so; a schedule switched off and on,
 * stored and audited.
 */

import assert from "node:assert/strict";
import { loadSchedules } from "../../src/config/load.ts";
import { occurrenceJob } from "../../src/schedule/plan.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";
import { SCHEDULES } from "../support/action_schedules.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };

Deno.test("jobs run refuses a manual schedule outside its runs_where and needs a reason", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const base = ["run", "reindex", "--db", db, "--config", config];
    const noReason = await runJobs([...base, "--environment", "staging"], { now: NOW, env: ENV });
    assert.equal(noReason.code, 2);
    assert.equal(noReason.out, "guard: on-call only, outside business hours");
    assert.match(noReason.err, /manual: --reason is required/);

    const elsewhere = await runJobs([...base, "--reason", "after deploy"], {
      now: NOW,
      env: { ...ENV, JOBS_ENVIRONMENT: "production" },
    });
    assert.equal(elsewhere.code, 1);
    assert.equal(
      elsewhere.out,
      [
        "guard: on-call only, outside business hours",
        `daemons serving queue "default": none live`,
        `warning: no live daemon serving queue "default" runs with --environment "staging": ` +
        "the job waits for one",
      ].join("\n"),
    );
    assert.equal(
      elsewhere.err,
      `jobs run: refused: schedule "reindex" runs only where the environment is "staging", ` +
        `and this is "production"`,
    );
    const unset = await runJobs([...base, "--reason", "after deploy"], { now: NOW, env: ENV });
    assert.equal(unset.code, 1);
    assert.match(unset.err, /and this is not set$/);
    await withStore(db, async (store) => assert.deepEqual(await store.jobsList({}), []));

    const ran = await runJobs([...base, "--reason", "after deploy", "--environment", "staging"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(ran.code, 0, ran.err);
    const occurrence = `reindex@${new Date(NOW).toISOString()}`;
    assert.match(ran.out, new RegExp(`ran reindex now: job \\d+, occurrence ${occurrence}`));
    await withStore(db, async (store) => {
      const [job] = await store.jobsList({ scheduleId: "reindex" });
      assert.equal(job?.occurrence, occurrence);
      assert.equal(job?.state, "available");
      assert.equal(job?.meta.manual, true);
      const audit = await store.auditList({ target: "schedule:reindex" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details]), [
        ["schedule.run", "ada", "after deploy", {
          job: job?.id,
          occurrence,
          trigger: "manual-schedule",
          environment: "staging",
        }],
      ]);
    });
  });
});

Deno.test("jobs run builds the occurrence exactly as the planner does, marked manual", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const ran = await runJobs(["run", "nightly", "--db", db, "--config", config, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(ran.code, 0, ran.err);
    const result = JSON.parse(ran.out);
    const loaded = await loadSchedules(config);
    assert.ok(loaded.ok);
    const schedule = loaded.config.schedules.find((s) => s.id === "nightly")!;
    const occurrence = `nightly@${new Date(NOW).toISOString()}`;
    const planned = occurrenceJob(schedule, { at: NOW, occurrence, local: "", note: null });
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id: result.id });
      assert.equal(result.occurrence, occurrence);
      assert.deepEqual(
        [job?.queue, job?.worker, job?.args, job?.tags, job?.maxAttempts, job?.scheduleId],
        [
          planned.queue,
          planned.worker,
          JSON.parse(planned.args),
          JSON.parse(planned.tags),
          planned.maxAttempts,
          "nightly",
        ],
      );
      assert.deepEqual(job?.meta, { ...JSON.parse(planned.meta), manual: true });
      assert.equal(job?.scheduledFor, NOW);
    });
    // The same instant again is the same identity: refused, not a second row.
    const twice = await runJobs(["run", "nightly", "--db", db, "--config", config], {
      now: NOW,
      env: ENV,
    });
    assert.equal(twice.code, 1);
    assert.match(twice.err, new RegExp(`occurrence "${occurrence}" already exists as job \\d+`));
  });
});

Deno.test("jobs disable needs a reason, is stored and audited, and enable undoes it", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const env = { USER: "ada" };
    const noReason = await runJobs(["disable", "nightly", "--db", db, "--config", config], {
      now: NOW,
      env,
    });
    assert.equal(noReason.code, 2);
    assert.match(noReason.err, /^jobs disable: .*"--reason/);

    const disabled = await runJobs(
      ["disable", "nightly", "--db", db, "--config", config, "--reason", "vendor API down"],
      { now: NOW, env },
    );
    assert.equal(disabled.code, 0, disabled.err);
    assert.match(disabled.out, /nightly disabled: nothing new is planned/);
    const shown = await runJobs(["schedules", "--db", db, "--config", config], { now: NOW, env });
    assert.match(shown.out, /^nightly .* disabled: vendor API down$/m);

    const unknown = await runJobs(
      ["disable", "nightlly", "--db", db, "--config", config, "--reason", "typo"],
      { now: NOW, env },
    );
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.err,
      /no schedule "nightlly" in the file or the store; did you mean "nightly"\?$/,
    );

    const enabled = await runJobs(
      ["enable", "nightly", "--db", db, "--config", config, "--reason", "vendor back"],
      { now: NOW + 60_000, env },
    );
    assert.match(enabled.out, /nightly enabled: the planner resumes it/);
    await withStore(db, async (store) => {
      const [row] = await store.schedulesList({ ids: ["nightly"] });
      assert.equal(row?.enabled, true);
      const audit = await store.auditList({ target: "schedule:nightly" });
      assert.deepEqual(audit.map((a) => [a.action, a.reason, a.details.was]), [
        ["schedule.disable", "vendor API down", true],
        ["schedule.enable", "vendor back", false],
      ]);
    });
  });
});

Deno.test("jobs run of a guarded schedule names the environments the live daemons serve", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, async (store) => {
      await store.nodeBeat({
        node: "web-1:42",
        queues: { default: 2 },
        environment: "production",
        now: NOW - 500,
      });
      await store.nodeBeat({ node: "web-2:7", queues: { default: 1 }, now: NOW - 500 });
      // Stale, and serving another queue: neither counts.
      await store.nodeBeat({
        node: "old:1",
        queues: { default: 1 },
        environment: "staging",
        now: NOW - 60_000,
      });
      await store.nodeBeat({
        node: "mail:3",
        queues: { mail: 1 },
        environment: "staging",
        now: NOW - 500,
      });
    });
    const run = (env: Record<string, string>) =>
      runJobs(["run", "reindex", "--db", db, "--config", config, "--reason", "after deploy"], {
        now: NOW,
        env: { ...ENV, ...env },
      });
    const none = await run({ JOBS_ENVIRONMENT: "staging" });
    assert.equal(none.code, 0, none.err);
    const lines = none.out.split("\n");
    assert.equal(
      lines[1],
      `daemons serving queue "default": web-1:42 (environment "production"), web-2:7 (no environment)`,
    );
    assert.equal(
      lines[2],
      `warning: no live daemon serving queue "default" runs with --environment "staging": ` +
        "the job waits for one, and a daemon of another environment that claims it discards it",
    );
    assert.match(lines[3]!, /^ran reindex now: job \d+/);

    await withStore(
      db,
      (store) =>
        store.nodeBeat({
          node: "stage-1:9",
          queues: { default: 1 },
          environment: "staging",
          now: NOW - 200,
        }),
    );
    const served = await runJobs(
      ["run", "reindex", "--db", db, "--config", config, "--reason", "again", "--json"],
      { now: NOW + 1000, env: { ...ENV, JOBS_ENVIRONMENT: "staging" } },
    );
    assert.equal(served.code, 0, served.err);
    assert.ok(!served.err.includes("warning"), served.err);
    assert.match(served.err, /stage-1:9 \(environment "staging"\)/);
    const result = JSON.parse(served.out);
    assert.equal(result.runsWhere, "staging");
    assert.deepEqual(result.daemons.map((d: { environment: string | null }) => d.environment), [
      "staging",
      "production",
      null,
    ]);
  });
});

Deno.test("jobs run, disable and enable never create a store at a mistyped --db", async () => {
  await withFiles(SCHEDULES, async ({ dir, config }) => {
    const missing = `${dir}/nope/jobs.db`;
    for (const command of [["run", "nightly"], ["disable", "nightly"], ["enable", "nightly"]]) {
      const r = await runJobs([...command, "--db", missing, "--config", config, "--reason", "x"], {
        now: NOW,
        env: ENV,
      });
      assert.equal(r.code, 1, command.join(" "));
      assert.equal(
        r.err,
        `jobs ${command[0]}: no directory "${dir}/nope" for the store "${missing}" (from --db)`,
      );
    }
    const typo = `${dir}/jobs.bd`;
    const r = await runJobs([
      "disable",
      "nightly",
      "--db",
      typo,
      "--config",
      config,
      "--reason",
      "x",
    ], {
      now: NOW,
      env: ENV,
    });
    assert.equal(r.code, 1);
    assert.match(r.err, /^jobs disable: no file ".*jobs\.bd" for the store \(from --db\); /);
    await assert.rejects(Deno.stat(typo), Deno.errors.NotFound);
  });
});
