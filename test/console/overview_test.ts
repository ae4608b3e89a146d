/**
 * The console's Overview in process, on every backend, at an injected
 * instant: jobs completed and attempts failed in the last hour give the
 * throughput chart's and the queue's sparkline's text alternatives their
 * totals, and failed today counts the day's failed attempts (not the last
 * hour's only, not yesterday's); the attention list names a failing
 * schedule, misfires, a stale pipeline, a paged run and a stuck job, each linking to
 * its page; a tenant's person sees its own tenant's items and none of
 * another's, and no queue, chart or node; a hostile worker name is escaped.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { definePipeline } from "../../src/ingest/definition.ts";
import type { ClaimedJob, NewJob } from "../../src/kernel/types.ts";
import { syncSchedules } from "../../src/runtime/planner.ts";
import type { Store } from "../../src/store/store.ts";
import { BACKENDS, newJob } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";
import { completed, retryable } from "../store/conformance/helpers.ts";

const ORIGIN = "http://127.0.0.1:9464";
const MINUTE = 60_000;
const NOW = Date.UTC(2026, 2, 7, 12, 30);
const HOSTILE = "<img src=x onerror=alert(1)>";

/** A bounded pipeline no run has completed: stale. */
const CATALOG = definePipeline({
  id: "catalog",
  source: { file: "/dev/null" },
  key: "sku",
  steps: [],
  dropReasons: ["duplicate", "poison"],
  sink: { worker: "sink" },
  freshness: { mode: "bounded", withinMs: 3_600_000 },
});

/** Inserts `job` due at `at`, claims it at `at` with a one-minute lease. */
async function claimAt(store: Store, job: NewJob, at: number): Promise<ClaimedJob> {
  await store.jobsInsert({ jobs: [job], now: at });
  const { jobs } = await store.jobsClaim({
    queue: job.queue,
    node: "node-a",
    limit: 1,
    now: at,
    leaseMs: MINUTE,
  });
  assert.equal(jobs.length, 1);
  return jobs[0]!;
}

/** A job of `queue` that ends at `at` (claimed a second before): completed, retried or discarded. */
async function endAt(
  store: Store,
  at: number,
  outcome: "completed" | "retryable" | "discarded",
  fields: Partial<NewJob> = {},
): Promise<number> {
  const queue = fields.queue ?? "mail";
  const job = await claimAt(
    store,
    newJob({ queue, scheduledAt: at - 1000, maxAttempts: 1, ...fields }),
    at - 1000,
  );
  const result = outcome === "completed"
    ? completed(job)
    : outcome === "retryable"
    ? retryable(job, at + MINUTE)
    : { ...retryable(job, at), outcome, error: "boom" } as const;
  const report = await store.jobsRecord({ node: "node-a", now: at, results: [result] });
  assert.deepEqual(report.lost, []);
  return job.id;
}

/** A failed occurrence of `schedule` (tenant `tenant`) that ended at `at`. */
async function failedOccurrence(store: Store, schedule: string, at: number, tenant: string | null) {
  const instant = at - 1000;
  await endAt(store, at, "discarded", {
    queue: "occurrences",
    scheduleId: schedule,
    scheduledFor: instant,
    occurrence: `${schedule}@${new Date(instant).toISOString()}`,
    tenant,
  });
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: the overview charts the last hour, counts failed today and lists what needs attention`, async () => {
    const clock = new FakeClock(NOW);
    const h = await backend.open(NOW - 24 * 3_600_000);
    try {
      const { store } = h;
      const app = consoleApp({
        store,
        clock,
        logger: () => {},
        definitions: () => ({ workflows: [], pipelines: [CATALOG] }),
      });
      const root = { actor: "root", reason: null, now: NOW };
      await syncSchedules(store, NOW - 24 * 3_600_000, [
        scheduleOf({ id: "nightly", cron: "0 3 * * *" }),
        { ...scheduleOf({ id: "tick", every: "1m" }), id: "tick:acme", tenant: "acme" },
        { ...scheduleOf({ id: "tick", every: "1m" }), id: "tick:globex", tenant: "globex" },
      ]);

      // Yesterday's failure counts nowhere; this morning's counts today only.
      await endAt(store, NOW - 13 * 3_600_000, "discarded");
      await failedOccurrence(store, "nightly", NOW - 3 * 3_600_000, null);
      await endAt(store, NOW - 2 * 3_600_000, "retryable", { queue: "mail", maxAttempts: 5 });
      // The last hour: 3 completed and 3 failed attempts in mail, 1 completed in reports
      // (and the 2 failed occurrences below).
      await endAt(store, NOW - 50 * MINUTE, "completed");
      await endAt(store, NOW - 20 * MINUTE, "completed");
      await endAt(store, NOW - 20 * MINUTE + 5000, "completed");
      await endAt(store, NOW - 15 * MINUTE, "discarded");
      await endAt(store, NOW - 10 * MINUTE, "discarded");
      await endAt(store, NOW - 5 * MINUTE, "retryable", { maxAttempts: 3 });
      await endAt(store, NOW - 5 * MINUTE, "completed", { queue: "reports" });
      // A failing schedule of each tenant's.
      await failedOccurrence(store, "tick:acme", NOW - 7 * MINUTE, "acme");
      await failedOccurrence(store, "tick:globex", NOW - 7 * MINUTE, "globex");
      // The planner skipped two of globex's occurrences (its misfire policy).
      await store.schedulePlan({
        id: "tick:globex",
        now: NOW - 30 * MINUTE,
        plan: () => ({
          jobs: [],
          cancelled: [],
          misfires: 2,
          lastMisfireFor: NOW - 31 * MINUTE,
          plannedFor: NOW - 30 * MINUTE,
        }),
      });
      // Stuck: executing, their one-minute leases ran out minutes ago; one is globex's.
      const stuck = await claimAt(
        store,
        newJob({ queue: "slow", worker: `w.slow${HOSTILE}`, scheduledAt: NOW - 10 * MINUTE }),
        NOW - 10 * MINUTE,
      );
      const globexStuck = await claimAt(
        store,
        newJob({
          queue: "slow",
          worker: "w.globex",
          scheduledAt: NOW - 8 * MINUTE,
          tenant: "globex",
        }),
        NOW - 8 * MINUTE,
      );
      // A run of globex's that paged (its job is globex's stuck one).
      const run = await store.ingestRunOpen({
        pipeline: "globex-feed",
        hash: "h1",
        jobId: globexStuck.id,
        fence: globexStuck.fence,
        trigger: "schedule",
        now: NOW - 8 * MINUTE,
      });
      assert.ok(run);
      assert.ok(
        await store.ingestRunFinish({
          lease: { runId: run.id, jobId: globexStuck.id, fence: globexStuck.fence },
          state: "paged",
          error: null,
          pending: 3,
          now: NOW - 8 * MINUTE + 1000,
        }),
      );

      for (
        const [name, tenant] of [["ada", null], ["amy", "acme"]] as const
      ) {
        await addPerson(store, { name, roles: ["viewer"], tenant, password: "pw" }, root, "host");
      }
      const signIn = async (name: string) => {
        const response = await app.fetch(
          new Request(`${ORIGIN}/login`, {
            method: "POST",
            headers: {
              "sec-fetch-site": "same-origin",
              "content-type": "application/x-www-form-urlencoded",
            },
            body: `name=${name}&password=pw`,
          }),
          { remote: "127.0.0.1" },
        );
        assert.equal(response.status, 303);
        return /=([\w-]+);/.exec(response.headers.get("set-cookie") ?? "")![1]!;
      };
      const overview = async (cookie: string) => {
        const response = await app.fetch(
          new Request(`${ORIGIN}/`, {
            headers: { cookie: `${SESSION_COOKIE}=${cookie}`, "sec-fetch-site": "same-origin" },
          }),
          { remote: "127.0.0.1" },
        );
        const text = await response.text();
        assert.equal(response.status, 200, text);
        return text;
      };

      const page = await overview(await signIn("ada"));
      const chart = /<svg [^>]*aria-label="([^"]*)"[^>]*data-chart="throughput"/.exec(page);
      assert.equal(
        chart?.[1],
        "Every queue, per minute: 4 completed, 5 failed attempts in the last hour",
      );
      assert.match(page, /<title>Every queue, per minute: 4 completed, 5 failed attempts/);
      const spark = (queue: string) =>
        new RegExp(`<svg [^>]*aria-label="([^"]*)"[^>]*data-sparkline="${queue}"`).exec(page)
          ?.[1];
      assert.equal(spark("mail"), "mail: 3 completed, 3 failed attempts in the last hour");
      assert.equal(spark("reports"), "reports: 1 completed, 0 failed attempts in the last hour");
      // Today's: mail's last hour (3) and this morning's retry; the occurrence in its queue.
      assert.match(page, /data-failed-today="mail">4</);
      assert.match(page, /data-failed-today="occurrences">3</);
      assert.match(page, /data-failed-today="reports">0</);
      assert.ok(!/ style=/.test(page), "no inline style");

      const items = [...page.matchAll(/<li data-attention="([\w-]+)"><a href="([^"]*)">([^<]*)</g)]
        .map(([, kind, href, text]) => ({ kind, href, text }));
      const find = (kind: string, href: string) =>
        items.find((i) => i.kind === kind && i.href === href);
      assert.match(
        find("schedule-failing", "/schedules/nightly")?.text ?? "",
        /1 failure in a row/,
      );
      assert.ok(find("schedule-failing", "/schedules/tick%3Aacme"));
      assert.ok(find("schedule-failing", "/schedules/tick%3Aglobex"));
      assert.match(
        find("schedule-misfires", "/schedules/tick%3Aglobex")?.text ?? "",
        /misfired: 2 occurrences skipped, the last for 2026-03-07T11:59:00Z/,
      );
      assert.match(find("pipeline-stale", "/pipelines")?.text ?? "", /catalog is stale/);
      assert.match(
        find("pipeline-run", "/pipelines")?.text ?? "",
        new RegExp(`globex-feed&#39;s last run \\(${run.id}\\) paged`),
      );
      assert.match(
        find("job-stuck", `/jobs/${stuck.id}`)?.text ?? "",
        /w\.slow&lt;img src=x onerror=alert\(1\)&gt; on slow\) is executing 9 min past its lease, held by node-a/,
      );
      assert.ok(!page.includes(HOSTILE), "the hostile worker is escaped");
      assert.ok(find("job-stuck", `/jobs/${globexStuck.id}`));
      assert.equal(items.length, 8, JSON.stringify(items));

      const tenantPage = await overview(await signIn("amy"));
      const tenantItems = [
        ...tenantPage.matchAll(/<li data-attention="([\w-]+)"><a href="([^"]*)">/g),
      ].map(([, kind, href]) => `${kind} ${href}`);
      assert.deepEqual(tenantItems, ["schedule-failing /schedules/tick%3Aacme"]);
      assert.ok(!tenantPage.includes("globex"), "nothing of globex's");
      assert.ok(!tenantPage.includes("nightly"), "no installation-wide schedule");
      assert.ok(!tenantPage.includes("data-chart"), "no installation-wide chart");
      assert.ok(!tenantPage.includes("data-failed-today"));
      assert.ok(!tenantPage.includes(`/jobs/${stuck.id}"`), "no installation-wide job");
    } finally {
      await h.close();
    }
  });

  Deno.test(`${backend.name}: an overview with nothing to report says so`, async () => {
    const clock = new FakeClock(NOW);
    const h = await backend.open(NOW);
    try {
      const app = consoleApp({ store: h.store, clock, logger: () => {} });
      await addPerson(
        h.store,
        { name: "ada", roles: ["viewer"], tenant: null, password: "pw" },
        { actor: "root", reason: null, now: NOW },
        "host",
      );
      const login = await app.fetch(
        new Request(`${ORIGIN}/login`, {
          method: "POST",
          headers: {
            "sec-fetch-site": "same-origin",
            "content-type": "application/x-www-form-urlencoded",
          },
          body: "name=ada&password=pw",
        }),
        { remote: "127.0.0.1" },
      );
      const cookie = /=([\w-]+);/.exec(login.headers.get("set-cookie") ?? "")![1]!;
      const page = await (await app.fetch(
        new Request(`${ORIGIN}/`, {
          headers: { cookie: `${SESSION_COOKIE}=${cookie}`, "sec-fetch-site": "same-origin" },
        }),
        { remote: "127.0.0.1" },
      )).text();
      assert.match(page, /Nothing needs attention\./);
      assert.match(
        page,
        /aria-label="Every queue, per minute: 0 completed, 0 failed attempts in the last hour"/,
      );
    } finally {
      await h.close();
    }
  });
}
