/**
 * `kill -9` of the node running a workflow, at random points, 30 times:
 * the run still completes, every step's side effect is there once (counted
 * by its idempotency key), and no step is created twice.
 *
 * The node is a child process (`workflow_crash_child.ts`) running the
 * kernel through the library with a 0.9 s lease, so a killed node's steps
 * come back within about a second (the daemon's lease is a fixed 30 s).
 * The parent starts a run of its 5-step workflow (one step fanned out, a
 * fan-in after it), then 30 times starts a child, waits a random short
 * while, and SIGKILLs it; a kill lands while a step sleeps, between a
 * step's side effect and its record, while a run advances, or while the
 * node starts. A run that completes between two kills is followed by a new
 * one, so every kill lands in a running workflow. Then a last child
 * finishes the runs and every run is checked.
 *
 * The kill points (how long after its start each node dies) come from a
 * seed shown in the test's name: `JOBS_CRASH_SEED=<seed>` replays them
 * (the interleaving with the node's own timing can still differ).
 */

import assert from "node:assert/strict";
import {
  type Jobs,
  openJobs,
  type PostgresTx,
  silentLogger,
  type SqliteTx,
} from "../../src/mod.ts";
import { waitUntil } from "../../src/testing.ts";
import { stepIdentity } from "../../src/workflow/advance.ts";
import { tempDir } from "../support/stores.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import { CrashNode } from "../support/crash_node.ts";
import { CRASH_WORKFLOW, createEffects, PARTS, readEffects } from "./workflow_crash_child.ts";
import { seeded } from "../support/seeded.ts";

const CHILD = new URL("./workflow_crash_child.ts", import.meta.url).pathname;
const KILLS = 30;
const SEED = Number(Deno.env.get("JOBS_CRASH_SEED") ?? Math.floor(Math.random() * 2 ** 31));

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The body, on the store at `location` (a SQLite file or a PostgreSQL schema). */
async function crashThirtyTimes(location: string): Promise<void> {
  const random = seeded(SEED);
  const jobs = await openJobs(location, { logger: silentLogger }) as Jobs<SqliteTx | PostgresTx>;
  try {
    await createEffects(jobs);
    jobs.registerWorkflow(CRASH_WORKFLOW);
    // A run that completes between two kills is followed by another, so every
    // kill lands in a running workflow; all of them are checked at the end.
    const runs: number[] = [];
    const startRun = async () =>
      runs.push((await jobs.startWorkflow("crash", { n: runs.length })).id);
    const current = async () => (await jobs.store.workflowGet({ id: runs.at(-1)! }))!;
    await startRun();

    /** Kills by how many of the five steps of the current run had completed before them. */
    const landed = new Map<number, number>();
    let midRun = 0;
    for (let kill = 1; kill <= KILLS; kill++) {
      if ((await current()).run.state === "completed") await startRun();
      await using node = new CrashNode(
        CHILD,
        [location, `crash-${kill}`, String(SEED + kill)],
        `crash-${kill}`,
      );
      // One kill in five lands while the node starts; the rest once it runs.
      if (random() < 0.8) {
        await waitUntil(`crash-${kill} to be ready`, () => node.ready, { timeoutMs: 20_000 });
      }
      // The kill point itself (random by design), not a wait for something.
      await delay(Math.floor(random() * 500));
      const status = await node.kill();
      assert.equal(status.signal, "SIGKILL", `crash-${kill} ended before its kill (seed ${SEED})`);
      const detail = await current();
      if (detail.run.state === "running") midRun++;
      const done = detail.steps.filter((s) => s.item === -1 && s.state === "completed").length;
      landed.set(done, (landed.get(done) ?? 0) + 1);
    }

    await using last = new CrashNode(CHILD, [location, "crash-last", String(SEED)], "crash-last");
    await waitUntil("crash-last to be ready", () => last.ready, { timeoutMs: 20_000 });
    await waitUntil(
      `${runs.length} runs to complete after ${KILLS} kills (seed ${SEED})`,
      async () => {
        const states = await Promise.all(
          runs.map(async (id) => (await jobs.store.workflowGet({ id }))?.run.state),
        );
        const wrong = states.filter((s) => s !== "running" && s !== "completed");
        assert.deepEqual(wrong, [], `runs ended ${wrong.join(", ")} (seed ${SEED})`);
        return states.every((s) => s === "completed");
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const stopped = await last.stop();
    assert.equal(stopped.status.code, 0, stopped.stderr);

    const why = `seed ${SEED}, ${runs.length} runs, ${midRun} of ${KILLS} kills mid-run`;
    let stepJobs = 0;
    let reruns = 0;
    for (const id of runs) {
      const checked = await check(jobs, id, why);
      stepJobs += checked.jobs;
      reruns += checked.reruns;
    }
    const counts = await jobs.store.jobsCount({});
    const total = counts.reduce((n, c) => n + c.count, 0);
    assert.equal(total, stepJobs, `no job beside the steps' (${why})`);
    const effects = await readEffects(jobs);
    assert.equal(effects.length, stepJobs, `one side effect per step job (${why})`);
    const tries = effects.reduce((n, e) => n + e.attempts, 0);
    console.log(
      `${why}; ${reruns} attempts rerun, ${tries - effects.length} side effects retried and ` +
        `found done; kills by steps completed before them: ${
          [...landed].sort((a, b) => a[0] - b[0]).map(([n, k]) => `${n}: ${k}`).join(", ")
        }`,
    );
  } finally {
    await jobs.close();
  }
}

/**
 * Everything run `id` left behind, against what one clean run would leave;
 * returns how many step jobs it has and how many of their attempts reran.
 */
async function check(
  jobs: Jobs<SqliteTx | PostgresTx>,
  id: number,
  why: string,
): Promise<{ jobs: number; reruns: number }> {
  const detail = (await jobs.store.workflowGet({ id }))!;
  why = `run ${id}, ${why}`;
  assert.equal(detail.run.state, "completed", why);
  assert.equal(detail.run.error, null, why);

  // Every step row once: the five steps, and each item of the fanned-out one.
  const expected = [
    ...CRASH_WORKFLOW.steps.map((s) => `${s.id}#-1`),
    ...Array.from({ length: PARTS }, (_, i) => `part#${i}`),
  ];
  const rows = detail.steps;
  assert.deepEqual(rows.map((r) => r.kind), rows.map(() => "step"), why);
  assert.deepEqual(rows.map((r) => `${r.step}#${r.item}`).sort(), expected.sort(), why);
  assert.deepEqual(rows.filter((r) => r.state !== "completed"), [], why);

  // Every step's job once, with the step's identity, completed by exactly one attempt.
  const withJobs = rows.filter((r) => r.jobId !== null);
  assert.equal(
    withJobs.length,
    expected.length - 1,
    `only the fanned-out step has no job (${why})`,
  );
  assert.equal(new Set(withJobs.map((r) => r.jobId)).size, withJobs.length, why);
  let reruns = 0;
  for (const row of withJobs) {
    const identity = stepIdentity(id, row.step, row.item, "step");
    const found = await jobs.store.jobsList({ occurrence: identity });
    assert.deepEqual(found.map((j) => [j.id, j.state]), [[row.jobId, "completed"]], identity);
    const attempts = await jobs.store.attemptsList({ jobId: row.jobId! });
    const outcomes = attempts.map((a) => a.outcome);
    assert.equal(outcomes.filter((o) => o === "completed").length, 1, `${identity}: ${outcomes}`);
    reruns += attempts.length - 1;
  }

  // Every side effect once, by idempotency key.
  const keys = withJobs.map((r) => stepIdentity(id, r.step, r.item, "step")).sort();
  const effects = (await readEffects(jobs)).filter((e) => e.key.startsWith(`${id}/`));
  assert.deepEqual(effects.map((e) => e.key).sort(), keys, `side effects (${why})`);

  // The fan-in saw every item's result, once each.
  const merge = rows.find((r) => r.step === "merge")!;
  const total = Array.from({ length: PARTS }, (_, i) => i * 10).reduce((a, b) => a + b, 0);
  assert.deepEqual(JSON.parse(merge.result!), { count: PARTS, total }, why);
  return { jobs: withJobs.length, reruns };
}

Deno.test({
  name:
    `[sqlite] kill -9 at random points of a 5-step workflow, 30 times: every step completes once, each run completes, no step is created twice (seed ${SEED})`,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await tempDir();
    try {
      await crashThirtyTimes(`${dir.path}/jobs.db`);
    } finally {
      await dir.cleanup();
    }
  },
});

Deno.test({
  name:
    `[postgres] kill -9 at random points of a 5-step workflow, 30 times: every step completes once, each run completes, no step is created twice (seed ${SEED})`,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using pg = postgresLocation();
    await crashThirtyTimes(pg.url);
  },
});
