/**
 * `GET|POST /api/v1/jobs/{id}/replay` on every backend: the preview says
 * which definition a replay would run (the one the store last synced, or
 * the job's own) and what differs, changing nothing; the replay runs it,
 * audited with the principal's name; a schedule's job without a stored
 * definition is refused a live replay (409); a viewer previews and cannot
 * replay; a tenant's principal replays its tenant's jobs only.
 */

import assert from "node:assert/strict";
import { enqueueJob } from "../../src/admin/jobs.ts";
import { runScheduleNow } from "../../src/admin/schedules.ts";
import { definitionHash, syncSchedules } from "../../src/runtime/planner.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import { BACKENDS } from "../support/backends.ts";
import { scheduleOf } from "../support/schedules.ts";
import { apiHarness, INSTALL_TOKEN } from "./api_support.ts";

type Api = Awaited<ReturnType<typeof apiHarness>>;

/** `nightly` as first declared (its command fails) and as fixed. */
function nightly(command: string[]): Schedule {
  return scheduleOf({ id: "nightly", cron: "0 3 * * *", queue: "reports", run: { command } });
}

/**
 * One occurrence of `nightly` planned with the failing command, then the
 * file fixed and synced again: a live replay runs `["true"]`.
 */
async function fixedOccurrence(api: Api): Promise<{ id: number; fixed: Schedule }> {
  const now = api.clock.now();
  const broken = nightly(["sh", "-c", "exit 1"]);
  await syncSchedules(api.store, now, [broken]);
  const run = await runScheduleNow(api.store, broken, { actor: "root", reason: null, now }, null);
  const fixed = nightly(["true"]);
  await syncSchedules(api.store, now, [fixed]);
  return { id: run.id, fixed };
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a viewer previews a replay (live or as planned) and gets 403 replaying`, async () => {
    await using api = await apiHarness(backend);
    const { id, fixed } = await fixedOccurrence(api);
    const viewer = await api.token("reader", ["viewer"]);
    const live = await api.call("GET", `/api/v1/jobs/${id}/replay`, viewer);
    assert.equal(live.status, 200);
    assert.equal(live.json.id, id);
    assert.match(live.json.occurrence, /^nightly@/);
    assert.equal(live.json.executing, false);
    assert.equal(live.json.definition.runs, "live");
    assert.equal(live.json.definition.hash, definitionHash(fixed));
    assert.notEqual(live.json.definition.planned, live.json.definition.hash);
    assert.ok(
      live.json.definition.differences.some((d: string) =>
        /^args\.argv: .* -> \["true"\]$/.test(d)
      ),
      live.json.definition.differences.join("\n"),
    );
    const explicit = await api.call("GET", `/api/v1/jobs/${id}/replay?definition=live`, viewer);
    assert.deepEqual(explicit.json, live.json);
    const planned = await api.call(
      "GET",
      `/api/v1/jobs/${id}/replay?definition=as-planned`,
      viewer,
    );
    assert.equal(planned.status, 200);
    assert.equal(planned.json.definition.runs, "as-planned");
    assert.deepEqual(planned.json.definition.differences, []);
    assert.match(planned.json.definition.why, /as-planned/);

    const refused = await api.call("POST", `/api/v1/jobs/${id}/replay`, viewer, {
      reason: "vendor fixed the feed",
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.json.error.code, "role-required");
    assert.match(refused.json.error.message, /"operator"/);
    assert.deepEqual(await api.store.auditList({ target: `job:${id}` }), []);
    assert.deepEqual(((await api.store.jobGet({ id }))?.args as { argv: string[] }).argv, [
      "sh",
      "-c",
      "exit 1",
    ]);
  });

  Deno.test(`${backend.name}: an operator replays with the stored live definition or as planned, audited with its name`, async () => {
    await using api = await apiHarness(backend);
    const { id, fixed } = await fixedOccurrence(api);
    const ops = await api.token("night-ops", ["operator"]);
    const planned = await api.call("POST", `/api/v1/jobs/${id}/replay`, ops, {
      reason: "once more as it was",
      definition: "as-planned",
    });
    assert.equal(planned.status, 201);
    assert.equal(planned.json.id, id);
    assert.equal(planned.json.replayOf, id);
    assert.equal(planned.json.was, "available");
    assert.equal(planned.json.state, "available");
    assert.equal(planned.json.forced, false);
    assert.equal(planned.json.definition.runs, "as-planned");
    assert.deepEqual(((await api.store.jobGet({ id }))?.args as { argv: string[] }).argv, [
      "sh",
      "-c",
      "exit 1",
    ]);

    const live = await api.call("POST", `/api/v1/jobs/${id}/replay`, ops, {
      reason: "vendor fixed the feed",
    });
    assert.equal(live.status, 201);
    assert.equal(live.json.replayOf, id);
    assert.equal(live.json.definition.runs, "live");
    assert.equal(live.json.definition.hash, definitionHash(fixed));
    assert.deepEqual(((await api.store.jobGet({ id }))?.args as { argv: string[] }).argv, ["true"]);
    const rows = await api.store.auditList({ target: `job:${id}` });
    assert.deepEqual(
      rows.map((r) => [r.action, r.actor, r.reason]),
      [
        ["job.replay", "token:night-ops", "once more as it was"],
        ["job.replay", "token:night-ops", "vendor fixed the feed"],
      ],
    );
    // By occurrence, as `jobs replay <occurrence>`: its identity or another spelling of its instant.
    const occurrence = (await api.store.jobGet({ id }))!.occurrence!;
    assert.equal(occurrence, "nightly@2026-01-01T00:00:00.000Z");
    for (const ref of [occurrence, "nightly@2026-01-01T00:00Z", "nightly@2026-01-01T01:00+01:00"]) {
      const path = `/api/v1/jobs/${encodeURIComponent(ref)}/replay`;
      const preview = await api.call("GET", path, ops);
      assert.equal(preview.status, 200, ref);
      assert.equal(preview.json.id, id);
      const byOccurrence = await api.call("POST", path, ops, {
        reason: "by its occurrence",
        definition: "as-planned",
      });
      assert.equal(byOccurrence.status, 201, ref);
      assert.equal(byOccurrence.json.replayOf, id);
    }
    const old = await api.call("POST", `/api/v1/jobs/${id}/replay`, INSTALL_TOKEN, {
      reason: "from the old token",
    });
    assert.equal(old.status, 201);
    assert.equal(
      (await api.store.auditList({ target: `job:${id}` })).at(-1)?.actor,
      "token:installation",
    );
  });

  Deno.test(`${backend.name}: a schedule's job without a stored definition is refused a live replay (409), not an as-planned one`, async () => {
    await using api = await apiHarness(backend);
    const now = api.clock.now();
    // Never synced: the store has no row, so no definition, for `gone`.
    const gone = scheduleOf({ id: "gone", cron: "0 3 * * *", run: { command: ["true"] } });
    const run = await runScheduleNow(api.store, gone, { actor: "root", reason: null, now }, null);
    const ops = await api.token("ops", ["operator"]);
    const preview = await api.call("GET", `/api/v1/jobs/${run.id}/replay`, ops);
    assert.equal(preview.status, 409);
    assert.equal(preview.json.error.code, "live-definition-unavailable");
    assert.match(preview.json.error.message, /"as-planned"/);
    const refused = await api.call("POST", `/api/v1/jobs/${run.id}/replay`, ops, {
      reason: "try the live one",
      definition: "live",
    });
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, "live-definition-unavailable");
    assert.deepEqual(await api.store.auditList({ target: `job:${run.id}` }), []);
    const planned = await api.call("POST", `/api/v1/jobs/${run.id}/replay`, ops, {
      reason: "run it as it was",
      definition: "as-planned",
    });
    assert.equal(planned.status, 201);
  });

  Deno.test(`${backend.name}: an executing job is replayed only with force (409 job-executing without)`, async () => {
    await using api = await apiHarness(backend);
    const { id } = await fixedOccurrence(api);
    const { jobs } = await api.store.jobsClaim({
      queue: "reports",
      node: "node-a",
      limit: 1,
      now: api.clock.now(),
      leaseMs: 3_600_000,
    });
    assert.deepEqual(jobs.map((j) => j.id), [id]);
    const ops = await api.token("ops", ["operator"]);
    const preview = await api.call("GET", `/api/v1/jobs/${id}/replay`, ops);
    assert.equal(preview.json.executing, true);
    const refused = await api.call("POST", `/api/v1/jobs/${id}/replay`, ops, {
      reason: "it hangs",
    });
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, "job-executing");
    assert.equal((await api.store.jobGet({ id }))?.state, "executing");
    const forced = await api.call("POST", `/api/v1/jobs/${id}/replay`, ops, {
      reason: "it hangs",
      force: true,
    });
    assert.equal(forced.status, 201);
    assert.equal(forced.json.was, "executing");
    assert.equal(forced.json.forced, true);
    assert.equal((await api.store.jobGet({ id }))?.state, "available");
  });

  Deno.test(`${backend.name}: an acme operator previews and replays acme's jobs only; globex's are 404`, async () => {
    await using api = await apiHarness(backend);
    const who = { actor: "root", reason: null, now: api.clock.now() };
    const acmeJob = await enqueueJob(api.store, "send", { to: "a" }, { tenant: "acme" }, who);
    const globexJob = await enqueueJob(api.store, "send", { to: "g" }, { tenant: "globex" }, who);
    const acme = await api.token("acme-ops", ["operator"], "acme");
    const gone = scheduleOf({ id: "globex-feed", cron: "0 3 * * *", tenant: "globex" });
    const theirs = await runScheduleNow(api.store, gone, who, null);
    assert.equal((await api.store.jobGet({ id: theirs.id }))?.tenant, "globex");
    for (const id of [globexJob.id, 999_999, encodeURIComponent(theirs.occurrence)]) {
      const preview = await api.call("GET", `/api/v1/jobs/${id}/replay`, acme);
      assert.equal(preview.status, 404, String(id));
      assert.equal(preview.json.error.code, "job-not-found");
      const replay = await api.call("POST", `/api/v1/jobs/${id}/replay`, acme, {
        reason: "not mine to replay",
      });
      assert.equal(replay.status, 404, String(id));
      assert.equal(replay.json.error.code, "job-not-found");
    }
    assert.deepEqual(
      (await api.store.auditList({ target: `job:${globexJob.id}` })).map((r) => r.action),
      ["job.enqueue"],
    );
    assert.deepEqual(await api.store.auditList({ target: `job:${theirs.id}` }), []);
    const preview = await api.call("GET", `/api/v1/jobs/${acmeJob.id}/replay`, acme);
    assert.equal(preview.status, 200);
    assert.equal(preview.json.definition.runs, "as-planned");
    assert.match(preview.json.definition.why, /not a schedule's occurrence/);
    const replayed = await api.call("POST", `/api/v1/jobs/${acmeJob.id}/replay`, acme, {
      reason: "customer asked again",
    });
    assert.equal(replayed.status, 201);
    assert.equal((await api.store.jobGet({ id: acmeJob.id }))?.tenant, "acme");
    const [, row] = await api.store.auditList({ target: `job:${acmeJob.id}` });
    assert.equal(row?.action, "job.replay");
    assert.equal(row?.actor, "token:acme-ops");
  });

  Deno.test(`${backend.name}: bad replay bodies and queries are 400 with stable codes; unknown ids 404`, async () => {
    await using api = await apiHarness(backend);
    const { id } = await fixedOccurrence(api);
    const ops = await api.token("ops", ["operator"]);
    const post = (body: unknown) => api.call("POST", `/api/v1/jobs/${id}/replay`, ops, body);
    const cases: [unknown, string, RegExp][] = [
      [{}, "body-invalid", /"reason"/],
      [{ reason: "TODO" }, "reason-invalid", /not a reason/],
      [{ reason: "a real one", definition: "newest" }, "body-invalid", /"definition"/],
      [{ reason: "a real one", force: "yes" }, "body-invalid", /"force"/],
      [{ reason: "a real one", tenant: "globex" }, "body-invalid", /unknown field "tenant"/],
    ];
    for (const [body, code, message] of cases) {
      const refused = await post(body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.json.error.code, code);
      assert.match(refused.json.error.message, message);
    }
    for (const query of ["definition=newest", "tenant=acme"]) {
      const refused = await api.call("GET", `/api/v1/jobs/${id}/replay?${query}`, ops);
      assert.equal(refused.status, 400, query);
      assert.equal(refused.json.error.code, "query-invalid");
    }
    assert.deepEqual(await api.store.auditList({ target: `job:${id}` }), []);
    for (const bad of ["999999", "abc", "nightly@2026-01-01T03:00:00.000Z"]) {
      const path = `/api/v1/jobs/${encodeURIComponent(bad)}/replay`;
      assert.equal((await api.call("GET", path, ops)).status, 404, bad);
      const missing = await api.call("POST", path, ops, { reason: "a real one" });
      assert.equal(missing.status, 404, bad);
      assert.equal(missing.json.error.code, "job-not-found");
    }
  });
}
