/**
 * `jobs replay` and `jobs retry | cancel | discard`: what each changes, what it
 * skips, what it asks, and what it records.
 */

import assert from "node:assert/strict";
import { runJobs, seedJobs, withFiles } from "../../support/cli.ts";
import { withStore } from "../../support/stores.ts";
import { SCHEDULES } from "../../support/action_schedules.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };
const OCCURRENCE = "nightly@2026-06-01T03:00:00.000Z";

Deno.test("jobs replay adds a replay attempt to the same occurrence, audited", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    const [id] = await seedJobs(db, NOW, [{ occurrence: OCCURRENCE, scheduleId: "nightly" }], {
      claim: 1,
      complete: 1,
    });
    const noReason = await runJobs(["replay", OCCURRENCE, "--db", db], { now: NOW, env: ENV });
    assert.equal(noReason.code, 2);
    assert.match(noReason.err, /"--reason/);

    const replayed = await runJobs(
      ["replay", OCCURRENCE, "--db", db, "--reason", "report was empty", "--as-planned"],
      { now: NOW, env: ENV },
    );
    assert.equal(replayed.code, 0, replayed.err);
    assert.equal(
      replayed.out,
      `replayed job ${id} (${OCCURRENCE}): it was completed; now available, ` +
        `its next attempt recorded as a replay by ada\n  runs as planned: --as-planned`,
    );

    await withStore(db, async (store) => {
      const jobs = await store.jobsList({ occurrence: OCCURRENCE });
      assert.deepEqual(jobs.map((j) => [j.id, j.state]), [[id, "available"]]);
      const { jobs: [again] } = await store.jobsClaim({
        queue: "default",
        node: "node-b",
        limit: 1,
        now: NOW + 1,
        leaseMs: 30_000,
      });
      assert.equal(again?.id, id);
      await store.jobsRecord({
        node: "node-b",
        now: NOW + 2,
        results: [{
          id: id!,
          fence: again!.fence,
          attempt: again!.attempt,
          startedAt: again!.attemptedAt,
          outcome: "completed",
        }],
      });
      const attempts = await store.attemptsList({ jobId: id! });
      assert.deepEqual(attempts.map((a) => [a.kind, a.actor, a.reason, a.node, a.outcome]), [
        ["run", null, null, "node-a", "completed"],
        ["replay", "ada", "report was empty", "node-b", "completed"],
      ]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(
        audit.map((a) => [
          a.action,
          a.actor,
          a.reason,
          a.details.occurrence,
          a.details.was,
          a.details.force,
        ]),
        [["job.replay", "ada", "report was empty", OCCURRENCE, "completed", false]],
      );
    });

    // By id too; an unknown one is an error naming it.
    const byId = await runJobs(
      ["replay", String(id), "--db", db, "--reason", "again", "--json", "--as-planned"],
      { now: NOW + 10, env: ENV },
    );
    assert.equal(byId.code, 0, byId.err);
    assert.deepEqual(JSON.parse(byId.out), {
      id,
      occurrence: OCCURRENCE,
      was: "completed",
      state: "available",
      forced: false,
      definition: {
        runs: "as-planned",
        why: "--as-planned",
        planned: null,
        hash: null,
        differences: [],
      },
    });
    const unknown = await runJobs(["replay", "nightly@1999", "--db", db, "--reason", "x"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.err,
      `jobs replay: no job or occurrence "nightly@1999": its instant is not one such as ` +
        `2026-03-08T07:00Z, 2026-03-08T08:00+01:00 or a local time such as ` +
        `2026-03-08T08:00[Europe/Paris]; did you mean "${OCCURRENCE}"? (the latest stored ` +
        `occurrences)`,
    );
  });
});

Deno.test("jobs replay refuses an executing job unless --force, which breaks its lease", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    const [id] = await seedJobs(db, NOW, [{ occurrence: OCCURRENCE, scheduleId: "nightly" }], {
      claim: 1,
    });
    const refused = await runJobs(["replay", OCCURRENCE, "--db", db, "--reason", "stuck"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(refused.code, 1);
    assert.equal(
      refused.err,
      `jobs replay: job ${id} (${OCCURRENCE}) is executing on node-a; nothing changed. ` +
        `To break its lease and replay it, run: jobsctl replay ${OCCURRENCE} --force ` +
        `--reason stuck --db ${db}`,
    );
    await withStore(db, async (store) => {
      assert.equal((await store.jobGet({ id: id! }))?.state, "executing");
      assert.deepEqual(await store.auditList({ target: `job:${id}` }), []);
    });

    const forced = await runJobs(
      ["replay", OCCURRENCE, "--db", db, "--reason", "stuck", "--force"],
      { now: NOW, env: ENV },
    );
    assert.equal(forced.code, 0, forced.err);
    assert.match(forced.out, /it was executing; the running attempt on node-a lost its lease/);
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id: id! });
      assert.equal(job?.state, "available");
      assert.equal(job?.occurrence, OCCURRENCE);
      const lease = { id: id!, fence: 1 };
      assert.deepEqual(await store.jobsLeasesLost({ node: "node-a", leases: [lease] }), [lease]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => a.details.force), [true]);
    });
  });
});

Deno.test("jobs retry with filters previews, changes nothing unless confirmed, acts with --yes", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    const ids = await seedJobs(db, NOW, [
      { queue: "mail", worker: "send" },
      { queue: "mail", worker: "send" },
      { queue: "mail", worker: "send\x1b[31m" },
      { queue: "other", worker: "send" },
    ]);
    await withStore(
      db,
      (store) =>
        store.jobsDiscard({ ids: [ids[0]!, ids[2]!, ids[3]!], now: NOW, reason: "poison" }),
    );
    const args = ["retry", "--queue", "mail", "--state", "discarded,available", "--db", db];

    const declined = await runJobs(args, { now: NOW, env: ENV, confirm: false });
    assert.equal(declined.code, 1);
    assert.equal(
      declined.err,
      "jobs retry: not confirmed; nothing changed. To act without asking, run: " +
        `jobsctl retry --state 'discarded,available' --queue mail --db ${db} --yes`,
    );
    const lines = declined.out.split("\n");
    assert.equal(lines[0], "would retry 2 jobs:");
    assert.match(lines[1]!, new RegExp(`^  #${ids[0]} +discarded +mail +send +-$`));
    // Stored text is escaped: the worker's escape sequence cannot reach the terminal.
    assert.match(lines[2]!, new RegExp(`^  #${ids[2]} +discarded +mail +send\\\\x1b\\[31m +-$`));
    assert.match(lines[3]!, new RegExp(`skipped #${ids[1]} +available .*: is already available$`));
    assert.equal(lines[4], "retry 2 jobs? [y/N]");
    assert.ok(!declined.out.includes("\x1b"));
    await withStore(db, async (store) => {
      const states = (await store.jobsList({ ids })).map((j) => j.state);
      assert.deepEqual(states, ["discarded", "available", "discarded", "discarded"]);
      assert.deepEqual(await store.auditList({ target: `job:${ids[0]}` }), []);
    });

    const yes = await runJobs([...args, "--yes", "--reason", "fixed the template"], {
      now: NOW + 1,
      env: ENV,
    });
    assert.equal(yes.code, 0, yes.err);
    assert.ok(!yes.out.includes("[y/N]"), "--yes asks nothing");
    assert.match(yes.out, /retried 2 jobs, skipped 1$/);
    await withStore(db, async (store) => {
      const states = (await store.jobsList({ ids })).map((j) => j.state);
      assert.deepEqual(states, ["available", "available", "available", "discarded"]);
      for (const id of [ids[0], ids[2]]) {
        const audit = await store.auditList({ target: `job:${id}` });
        assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details.was]), [
          ["job.retry", "ada", "fixed the template", "discarded"],
        ]);
      }
    });

    const confirmed = await runJobs(["retry", "--queue", "other", "--db", db], {
      now: NOW + 2,
      env: ENV,
      confirm: true,
    });
    assert.equal(confirmed.code, 0, confirmed.err);
    assert.match(confirmed.out, /retry 1 job\? \[y\/N\]\nretried #\d+ +\(was discarded\)/);

    const none = await runJobs(["retry", "--db", db], { now: NOW, env: ENV });
    assert.equal(none.code, 2);
    assert.match(none.err, /give job ids, or at least one filter/);
    const badState = await runJobs(["retry", "--state", "discared", "--db", db], {
      now: NOW,
      env: ENV,
    });
    assert.equal(badState.code, 2);
    assert.match(
      badState.err,
      /"discared" is not a state \(scheduled, available, .*\); did you mean "discarded"\?/,
    );
  });
});

Deno.test("jobs cancel and discard by id act at once, skip final jobs and audit each", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    // All three claimed in id order; the first completed.
    const [finished, first, second] = await seedJobs(db, NOW, [{}, {}, {}], {
      claim: 3,
      complete: 1,
    });
    const cancelled = await runJobs(
      [
        "cancel",
        String(finished),
        String(first),
        "--db",
        db,
        "--reason",
        "bad input password=hunter2",
      ],
      { now: NOW, env: ENV },
    );
    assert.equal(cancelled.code, 0, cancelled.err);
    assert.match(cancelled.out, /^skipped #\d+ .*: is already completed$/m);
    assert.match(cancelled.out, /cancelled 1 job, skipped 1$/);
    const discarded = await runJobs(["discard", String(second), "999", "--db", db, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(discarded.code, 1);
    assert.deepEqual(JSON.parse(discarded.out), {
      action: "discard",
      changed: [{ id: second, was: "executing" }],
      skipped: [],
      missing: [999],
    });
    assert.equal(discarded.err, "jobs discard: no job 999");
    await withStore(db, async (store) => {
      const jobs = await store.jobsList({ ids: [finished!, first!, second!] });
      assert.deepEqual(jobs.map((j) => j.state), ["completed", "cancelled", "discarded"]);
      // The reason is stored redacted, in the job's errors and in the audit trail.
      assert.equal(jobs[1]?.errors.at(-1)?.error, "bad input password=[REDACTED]");
      const cancelAudit = await store.auditList({ target: `job:${first}` });
      assert.deepEqual(cancelAudit.map((a) => [a.action, a.reason]), [
        ["job.cancel", "bad input password=[REDACTED]"],
      ]);
      const audit = await store.auditList({ target: `job:${second}` });
      assert.deepEqual(audit.map((a) => [a.action, a.details.was]), [["job.discard", "executing"]]);
    });
  });
});

const PARIS = `version: 1
schedules:
  - id: hello
    cron: "16 * * * *"
    timezone: Europe/Paris
    local_time: { reason: the greeting follows Paris office hours, gap: shift, overlap: first }
    run: { command: ["true"] }
`;
/** Three stored occurrences of `hello`, an hour apart; the middle one is 18:16 in Paris. */
const HELLO = [
  "hello@2026-12-04T16:16:00.000Z",
  "hello@2026-12-04T17:16:00.000Z",
  "hello@2026-12-04T18:16:00.000Z",
];

Deno.test("jobs replay and show find an occurrence by any spelling of its instant", async () => {
  await withFiles(PARIS, async ({ db, config }) => {
    const ids = await seedJobs(
      db,
      NOW,
      HELLO.map((occurrence) => ({ occurrence, scheduleId: "hello" })),
    );
    const spellings = [
      "hello@2026-12-04T17:16:00Z", // no milliseconds
      "hello@2026-12-04T17:16Z", // no seconds
      "hello@2026-12-04T18:16:00+01:00", // an offset
      "hello@2026-12-04T18:16[Europe/Paris]", // local time, zone in brackets
      "hello@2026-12-04T18:16", // local time in the schedule's zone (from --config)
    ];
    for (const ref of spellings) {
      const replayed = await runJobs(
        ["replay", ref, "--db", db, "--config", config, "--reason", "greeting lost", "--json"],
        { now: NOW, env: ENV },
      );
      assert.equal(replayed.code, 0, `${ref}: ${replayed.err}`);
      assert.deepEqual(
        [JSON.parse(replayed.out).id, JSON.parse(replayed.out).occurrence],
        [ids[1], HELLO[1]],
        ref,
      );
      const shown = await runJobs(["show", ref, "--db", db, "--config", config, "--json"], {
        now: NOW,
      });
      assert.equal(shown.code, 0, `${ref}: ${shown.err}`);
      assert.equal(JSON.parse(shown.out).job.occurrence, HELLO[1], ref);
    }
    // --as-planned still reads the local time in the file's zone.
    const planned = await runJobs(
      [
        "replay",
        "hello@2026-12-04 18:16:00",
        "--db",
        db,
        "--config",
        config,
        "--reason",
        "again",
        "--as-planned",
        "--json",
      ],
      { now: NOW, env: ENV },
    );
    assert.equal(planned.code, 0, planned.err);
    assert.equal(JSON.parse(planned.out).id, ids[1]);
  });
});

Deno.test("jobs replay and show list the nearest occurrences on a near miss", async () => {
  await withFiles(PARIS, async ({ db, config, dir }) => {
    // No schedules file to lend a zone where --config is not given.
    const bare = { JOBS_CONFIG: `${dir}/none.yaml` };
    await seedJobs(db, NOW, HELLO.map((occurrence) => ({ occurrence, scheduleId: "hello" })));
    const missed = await runJobs(
      ["replay", "hello@2026-12-04T17:15Z", "--db", db, "--config", config, "--reason", "lost"],
      { now: NOW, env: ENV },
    );
    assert.equal(missed.code, 1);
    assert.equal(
      missed.err,
      `jobs replay: no job or occurrence "hello@2026-12-04T17:15Z"; did you mean ` +
        `"${HELLO[0]}", "${HELLO[1]}" or "${HELLO[2]}"? (the nearest stored occurrences)`,
    );
    const shown = await runJobs(["show", "hello@2026-12-04T19:17:00+01:00", "--db", db], {
      now: NOW,
      env: bare,
    });
    assert.equal(shown.code, 1);
    assert.match(shown.err, /no job with occurrence "hello@2026-12-04T19:17:00\+01:00"/);
    assert.match(shown.err, /did you mean .*"hello@2026-12-04T18:16:00\.000Z"\?/);
    // A local time with no zone to read it in says so, and still lists neighbours.
    const noZone = await runJobs(["show", "hello@2026-12-04T18:16", "--db", db], {
      now: NOW,
      env: bare,
    });
    assert.equal(noZone.code, 1);
    assert.match(
      noZone.err,
      /its local time has no offset, and the schedules file declares no schedule of that id/,
    );
    assert.match(noZone.err, /did you mean/);
  });
});
