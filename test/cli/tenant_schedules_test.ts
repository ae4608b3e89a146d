/**
 * A schedule with `tenants:` on the command line: each tenant's schedule
 * `<id>:<tenant>` is named by that id wherever a schedule id or an
 * occurrence is typed (`jobs check | next | schedules | run | disable |
 * enable | replay | runbook`), the first `:` of it included.
 */

import assert from "node:assert/strict";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };

const SCHEDULES = `version: 1
schedules:
  - id: nightly
    cron: "0 3 * * *"
    tenants: [acme, globex]
    run: { command: ["true"] }
`;

Deno.test("jobs check, next and schedules name each tenant's schedule <id>:<tenant>", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    const checked = await runJobs(["check", "--config", config], { now: NOW, env: ENV });
    assert.equal(checked.code, 0, checked.err);
    assert.match(checked.out, /valid, 2 schedules/);

    const next = await runJobs(
      ["next", "nightly:acme", "--config", config, "--count", "1", "--json"],
      { now: NOW, env: ENV },
    );
    assert.equal(next.code, 0, next.err);
    assert.match(next.out, /nightly:acme@2026-06-02T03:00:00\.000Z/);
    const unknown = await runJobs(["next", "nightly", "--config", config], { now: NOW, env: ENV });
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.err, /no schedule "nightly".*"nightly:acme", "nightly:globex"/);

    await withStore(db, () => Promise.resolve());
    const listed = await runJobs(["schedules", "--config", config, "--db", db], {
      now: NOW,
      env: ENV,
    });
    assert.equal(listed.code, 0, listed.err);
    assert.match(listed.out, /nightly:acme/);
    assert.match(listed.out, /nightly:globex/);
  });
});

Deno.test("jobs disable <id>:<tenant> switches off that tenant's schedule only; enable switches it back", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const off = await runJobs(
      ["disable", "nightly:acme", "--reason", "acme moves", "--db", db, "--config", config],
      { now: NOW, env: ENV },
    );
    assert.equal(off.code, 0, off.err);
    await withStore(db, async (store) => {
      const rows = await store.schedulesList({});
      assert.deepEqual(rows.map((r) => [r.id, r.tenant, r.enabled]), [
        ["nightly:acme", "acme", false],
      ]);
      const audit = await store.auditList({ target: "schedule:nightly:acme" });
      assert.deepEqual(audit.map((a) => a.action), ["schedule.disable"]);
    });
    const on = await runJobs(
      ["enable", "nightly:acme", "--reason", "acme is back", "--db", db, "--config", config],
      { now: NOW + 1, env: ENV },
    );
    assert.equal(on.code, 0, on.err);
    await withStore(db, async (store) => {
      assert.equal((await store.schedulesList({ ids: ["nightly:acme"] }))[0]?.enabled, true);
    });
  });
});

Deno.test("jobs run <id>:<tenant> makes that tenant's occurrence; jobs replay reads its identity back", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const ran = await runJobs(["run", "nightly:globex", "--db", db, "--config", config, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(ran.code, 0, ran.err);
    const occurrence = `nightly:globex@${new Date(NOW).toISOString()}`;
    const id = await withStore(db, async (store) => {
      const [job] = await store.jobsList({ scheduleId: "nightly:globex" });
      assert.equal(job?.occurrence, occurrence);
      assert.equal(job?.tenant, "globex");
      assert.equal(job?.scheduledFor, NOW);
      const { jobs: [claimed] } = await store.jobsClaim({
        queue: "default",
        node: "node-a",
        limit: 1,
        now: NOW + 1,
        leaseMs: 30_000,
      });
      await store.jobsRecord({
        node: "node-a",
        now: NOW + 2,
        results: [{
          id: claimed!.id,
          fence: claimed!.fence,
          attempt: claimed!.attempt,
          startedAt: claimed!.attemptedAt,
          outcome: "completed",
        }],
      });
      return job!.id;
    });

    // As typed: the instant without milliseconds names the same occurrence.
    const typed = "nightly:globex@2026-06-01T09:00Z";
    const replayed = await runJobs(
      ["replay", typed, "--db", db, "--config", config, "--reason", "rerun", "--as-planned"],
      { now: NOW + 10, env: ENV },
    );
    assert.equal(replayed.code, 0, replayed.err);
    assert.match(replayed.out, new RegExp(`replayed job ${id} \\(${occurrence}\\)`));
  });
});

Deno.test("jobs runbook <id>:<tenant> gives that tenant's procedures, its id in every command", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const book = await runJobs(["runbook", "nightly:acme", "--db", db, "--config", config], {
      now: NOW,
      env: ENV,
    });
    assert.equal(book.code, 0, book.err);
    assert.match(book.out, /disable nightly:acme /);
    assert.match(book.out, /enable nightly:acme /);
    assert.doesNotMatch(book.out, /nightly:globex/);
  });
});
