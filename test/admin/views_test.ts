/**
 * The admin views (`jobs status`, `ls`, `show`, the TUI's data) read the
 * same on every store: one scenario written through the Store API, one set
 * of expectations, run on each backend of `BACKENDS`.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { findJob, jobDetail, jobsMatching, jobsView } from "../../src/admin/jobs.ts";
import { latestOccurrence } from "../../src/admin/schedules.ts";
import { statusView, storeCheck } from "../../src/admin/store.ts";
import { parseSchedules } from "../../src/config/load.ts";
import type { ScheduleConfig } from "../../src/config/types.ts";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS, newJob } from "../support/backends.ts";

const NOW = Date.UTC(2026, 2, 8, 12);

const SCHEDULES = `
version: 1
queues:
  mail: { concurrency: 4 }
schedules:
  - id: nightly
    cron: "0 3 * * *"
    timezone: UTC
    queue: mail
    run: { command: ["true"] }
  - id: hourly
    every: 1h
    run: { command: ["true"] }
`;

function config(): ScheduleConfig {
  const parsed = parseSchedules(SCHEDULES, "schedules.yaml");
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.config;
}

/**
 * Writes the scenario: three mail jobs (one completed, one retryable after
 * a failure, one scheduled), a default job cancelled by an operator, an
 * occurrence of `nightly` waiting in the default queue, a paused queue with its audit row, a live node and
 * a stale one, and `hourly` disabled by an operator.
 */
async function scenario(store: Store): Promise<{ ids: number[]; occurrence: string }> {
  const occurrence = "nightly@2026-03-08T03:00:00.000Z";
  const inserted = await store.jobsInsert({
    now: NOW - 60_000,
    jobs: [
      newJob({ scheduledAt: NOW - 60_000, queue: "mail", worker: "send", args: '{"to":"a"}' }),
      newJob({ scheduledAt: NOW - 60_000, queue: "mail", worker: "send", args: '{"to":"b"}' }),
      newJob({ scheduledAt: NOW + 60_000, queue: "mail", worker: "send", args: '{"to":"c"}' }),
      newJob({ scheduledAt: NOW - 60_000, worker: "report" }),
      newJob({
        scheduledAt: NOW - 9 * 3_600_000,
        worker: "jobs.command",
        occurrence,
        scheduleId: "nightly",
        scheduledFor: NOW - 9 * 3_600_000,
      }),
    ],
  });
  const ids = inserted.map((r) => r.id);
  const { jobs: claimed } = await store.jobsClaim({
    queue: "mail",
    node: "node-a",
    limit: 2,
    now: NOW - 50_000,
    leaseMs: 30_000,
  });
  assert.equal(claimed.length, 2);
  const [first, second] = claimed.sort((a, b) => a.id - b.id);
  const report = await store.jobsRecord({
    node: "node-a",
    now: NOW - 40_000,
    results: [
      {
        id: first!.id,
        fence: first!.fence,
        attempt: 1,
        startedAt: NOW - 50_000,
        outcome: "completed",
      },
      {
        id: second!.id,
        fence: second!.fence,
        attempt: 1,
        startedAt: NOW - 50_000,
        outcome: "retryable",
        error: "smtp: connection refused",
        at: NOW + 30_000,
      },
    ],
  });
  assert.equal(report.recorded.length, 2);
  await store.jobsCancel({ ids: [ids[3]!], now: NOW - 30_000, reason: "not needed" });
  await store.auditRecord({
    at: NOW - 30_000,
    actor: "ops",
    action: "job.cancel",
    target: `job:${ids[3]}`,
    reason: "not needed",
  });
  await store.queuePause({ name: "mail", paused: true, now: NOW - 20_000 });
  await store.auditRecord({
    at: NOW - 20_000,
    actor: "ops",
    action: "queue.pause",
    target: "queue:mail",
    reason: "smtp outage",
  });
  await store.nodeBeat({
    node: "node-a",
    queues: { mail: 4 },
    environment: "prod",
    now: NOW - 500,
  });
  await store.nodeBeat({ node: "node-b", queues: { default: 2 }, now: NOW - 60_000 });
  await store.schedulesSync({
    now: NOW - 3_600_000,
    schedules: [
      { id: "nightly", hash: "h1", tenant: null },
      { id: "hourly", hash: "h2", tenant: null },
    ],
  });
  await store.scheduleSetEnabled({
    id: "hourly",
    enabled: false,
    reason: "noisy",
    actor: "ops",
    now: NOW - 10_000,
  });
  return { ids, occurrence };
}

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] the admin views read the same scenario the same way`, async () => {
    const harness = await backend.open(NOW - 3_600_000);
    try {
      const { store } = harness;
      const { ids, occurrence } = await scenario(store);
      const clock = new FakeClock(NOW);

      const check = await storeCheck(store, { clock, schema: { version: 1, known: 1 } });
      assert.equal(check.kind, backend.name);
      assert.equal(check.reachable, true);
      assert.equal(check.error, null);

      const status = await statusView({ store, config: config(), now: NOW });
      const mail = status.queues.find((q) => q.name === "mail")!;
      assert.deepEqual(
        { ...mail.counts },
        {
          available: 0,
          scheduled: 1,
          executing: 0,
          retryable: 1,
          completed: 1,
          cancelled: 0,
          discarded: 0,
        },
      );
      assert.equal(mail.paused, true);
      assert.deepEqual(mail.pause, { at: NOW - 20_000, actor: "ops", reason: "smtp outage" });
      assert.equal(mail.declaredConcurrency, 4);
      assert.deepEqual(mail.nodes, { "node-a": 4 });
      const fallback = status.queues.find((q) => q.name === "default")!;
      assert.equal(fallback.counts.cancelled, 1);
      assert.equal(fallback.counts.available, 1);
      assert.equal(fallback.paused, false);
      assert.deepEqual(fallback.nodes, {}, "node-b is stale: it runs nothing");
      assert.deepEqual(
        status.nodes.map((n) => [n.node, n.stale, n.environment, n.heartbeatAgeMs]),
        [["node-a", false, "prod", 500], ["node-b", true, null, 60_000]],
      );
      assert.deepEqual(
        status.schedules.map((
          s,
        ) => [s.id, s.enabled, s.disabledIn, s.disabledBy, s.disabledReason]),
        [["nightly", true, null, null, null], ["hourly", false, "store", "ops", "noisy"]],
      );
      assert.equal(status.schedules[0]!.next, Date.UTC(2026, 2, 9, 3));

      const listed = await jobsView(store, { queue: "mail" });
      assert.deepEqual(listed.map((j) => j.id), [ids[2], ids[1], ids[0]]);
      assert.equal(await jobsMatching(store, { queue: "mail", state: "retryable" }), 1);
      assert.equal(await jobsMatching(store, { search: "SMTP: CONNECTION" }), 1);
      assert.deepEqual(
        (await jobsView(store, { state: ["completed", "cancelled"] })).map((j) => j.id),
        [ids[3], ids[0]],
      );

      assert.equal((await findJob(store, String(ids[1])))?.state, "retryable");
      assert.equal((await findJob(store, occurrence))?.id, ids[4]);
      assert.equal(await findJob(store, "nightly@2099-01-01T00:00:00.000Z"), null);
      assert.equal(await findJob(store, "99999999999999999999"), null);
      assert.equal((await latestOccurrence(store, "nightly"))?.occurrence, occurrence);
      assert.equal(await latestOccurrence(store, "hourly"), null);

      const failed = await jobDetail(store, String(ids[1]));
      assert.deepEqual(
        failed!.attempts.map((a) => [a.attempt, a.outcome, a.error]),
        [[1, "retryable", "smtp: connection refused"]],
      );
      const cancelled = await jobDetail(store, String(ids[3]));
      assert.equal(cancelled!.job.state, "cancelled");
      assert.deepEqual(
        cancelled!.audit.map((a) => [a.actor, a.action, a.reason]),
        [["ops", "job.cancel", "not needed"]],
      );
    } finally {
      await harness.close();
    }
  });
}

for (const backend of BACKENDS) {
  Deno.test(`[${backend.name}] jobsView and jobsMatching search the redacted args, not the secret`, async () => {
    const harness = await backend.open(NOW);
    try {
      const { store } = harness;
      const [secret] = (await store.jobsInsert({
        now: NOW,
        jobs: [newJob({ scheduledAt: NOW, args: JSON.stringify({ argv: ["password=PASS-222"] }) })],
      })).map((r) => r.id);
      for (const [search, expected] of [["PASS-2", []], ["password", [secret]]] as const) {
        const listed = await jobsView(store, { search });
        assert.deepEqual(listed.map((j) => j.id), expected, search);
        assert.equal(await jobsMatching(store, { search }), expected.length, search);
      }
    } finally {
      await harness.close();
    }
  });
}
