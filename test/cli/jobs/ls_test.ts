/**
 * `jobs ls`: one line per job, newest first, or every field with `--json`;
 * filtered, and stored text escaped.
 */

import assert from "node:assert/strict";
import { BACKENDS } from "../../support/backends.ts";
import {
  insert,
  jobs,
  nightlyJob,
  NOW,
  plainJob,
  runOnce,
  withFixture,
} from "../../support/operator_fixture.ts";

const MINUTE = 60_000;
const ESC = "\x1b";
const RLO = "\u202e";

Deno.test("jobs ls prints one line per job, newest first, with stored control characters escaped", async () => {
  await withFixture(async (f) => {
    const hostile = `boom ${ESC}[31mred${ESC}[0m ${RLO}txet desrever\nsecond line`;
    await insert(f.store, plainJob({ queue: "default", worker: "mailer" }));
    const failed = await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: hostile });
    const later = await insert(
      f.store,
      plainJob({ queue: "mail", worker: "digest", scheduledAt: NOW + 3 * MINUTE }),
      NOW - MINUTE,
    );

    const { code, out, err } = await jobs(["ls", "--db", f.db]);
    assert.equal(code, 0, err);
    assert.ok(!out.includes(ESC) && !out.includes(RLO), "no raw escape or bidi override");
    const lines = out.split("\n");
    assert.match(
      lines[0]!,
      /^ID\s+STATE\s+QUEUE\s+WORKER\s+TRY\s+NODE\s+OCCURRENCE\s+WHEN\s+LAST ERROR$/,
    );
    assert.equal(lines.length, 3);
    assert.match(
      lines[1]!,
      new RegExp(
        `^${later}\\s+scheduled\\s+mail\\s+digest\\s+0/3\\s+-\\s+-\\s+scheduled ` +
          `2026-06-01T09:03:00\\.000Z \\(in 3m\\)$`,
      ),
    );
    assert.match(
      lines[2]!,
      new RegExp(`^${failed}\\s+retryable\\s+default\\s+mailer\\s+1/3\\s+n1\\s+-`),
    );
    assert.ok(lines[2]!.endsWith("boom \\x1b[31mred\\x1b[0m \\u202etxet desrever"), lines[2]);
    assert.ok(!lines[2]!.includes("second line"), "only the first line of the error");

    const limited = await jobs(["ls", "--db", f.db, "--limit", "1"]);
    assert.equal(limited.out.split("\n").length, 2);
  });
});

Deno.test("jobs ls --json prints every field with ISO instants, escaping bidi overrides losslessly", async () => {
  await withFixture(async (f) => {
    await insert(
      f.store,
      plainJob({
        args: JSON.stringify({ to: "ops@example.com", password: "hunter2" }),
        tags: JSON.stringify(["billing"]),
      }),
    );
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: `bad ${RLO}gnirts` });

    const { code, out, err } = await jobs(["ls", "--db", f.db, "--json"]);
    assert.equal(code, 0, err);
    assert.ok(!out.includes(RLO), "the override is a \\u escape in the JSON text");
    const [job] = JSON.parse(out);
    assert.deepEqual(Object.keys(job).sort(), [
      "args",
      "attempt",
      "attemptedAt",
      "attemptedBy",
      "cancelledAt",
      "completedAt",
      "discardedAt",
      "errors",
      "fence",
      "id",
      "insertedAt",
      "leaseExpiresAt",
      "maxAttempts",
      "meta",
      "occurrence",
      "priority",
      "queue",
      "scheduleId",
      "scheduledAt",
      "scheduledFor",
      "state",
      "tags",
      "tenant",
      "uniqueKey",
      "uniqueStates",
      "worker",
    ]);
    assert.equal(job.state, "retryable");
    assert.equal(job.attemptedAt, "2026-06-01T08:40:00.000Z");
    assert.equal(job.completedAt, null);
    assert.deepEqual(job.tags, ["billing"]);
    assert.deepEqual(job.args, { to: "ops@example.com", password: "[REDACTED]" });
    assert.deepEqual(job.errors, [{
      at: "2026-06-01T08:40:01.500Z",
      attempt: 1,
      error: `bad ${RLO}gnirts`,
    }]);
  });
});

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] jobs ls --search finds the shown password= key, not the secret behind it`, async () => {
    const harness = await backend.open(NOW - 60 * MINUTE);
    try {
      const [secret] = (await harness.store.jobsInsert({
        now: NOW - 30 * MINUTE,
        jobs: [plainJob({ args: JSON.stringify({ argv: ["password=PASS-222"] }) })],
      })).map((r) => r.id);
      const ls = async (search: string) => {
        const r = await jobs(["ls", "--db", harness.location, "--json", "--search", search]);
        assert.equal(r.code, 0, r.err);
        assert.ok(!r.out.includes("PASS-222"), r.out);
        return JSON.parse(r.out).map((j: { id: number }) => j.id);
      };
      assert.deepEqual(await ls("PASS-2"), []);
      assert.deepEqual(await ls("password"), [secret]);
      assert.deepEqual(await ls("password=[REDACTED]"), [secret]);
      const text = await jobs(["ls", "--db", harness.location, "--search", "PASS-2"]);
      assert.equal(text.out, "no jobs match");
    } finally {
      await harness.close();
    }
  });
}

Deno.test("jobs ls filters by state, queue, schedule, worker, tag and search", async () => {
  await withFixture(async (f) => {
    const failed = await insert(f.store, plainJob({ worker: "mailer", tags: '["billing"]' }));
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: "SMTP 421 try later" });
    const nightly = await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    const digest = await insert(f.store, plainJob({ queue: "mail", worker: "digest" }));

    const ids = async (...args: string[]) => {
      const r = await jobs(["ls", "--db", f.db, "--json", ...args]);
      assert.equal(r.code, 0, r.err);
      return JSON.parse(r.out).map((j: { id: number }) => j.id);
    };
    assert.deepEqual(await ids(), [digest, nightly, failed]);
    assert.deepEqual(await ids("--state", "retryable"), [failed]);
    assert.deepEqual(await ids("--state", "retryable,available"), [digest, nightly, failed]);
    assert.deepEqual(await ids("--queue", "mail"), [digest]);
    assert.deepEqual(await ids("--schedule", "nightly"), [nightly]);
    assert.deepEqual(await ids("--worker", "mailer"), [failed]);
    assert.deepEqual(await ids("--tag", "billing"), [failed]);
    assert.deepEqual(await ids("--search", "smtp 421"), [failed]);
    assert.deepEqual(await ids("--search", "nightly@2026-06-01"), [nightly]);
    assert.deepEqual(await ids("--queue", "default", "--state", "available"), [nightly]);

    const none = await jobs(["ls", "--db", f.db, "--worker", "nobody"]);
    assert.equal(none.out, "no jobs match");

    const bad = await jobs(["ls", "--db", f.db, "--state", "retryable,runing"]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^jobs ls: .*"runing" is not a state \(scheduled, available/);
    const badLimit = await jobs(["ls", "--db", f.db, "--limit", "0"]);
    assert.equal(badLimit.code, 2);
    assert.match(badLimit.err, /"0" is not a whole number/);
  });
});
