/**
 * A node of the workflow crash test (`workflow_crash_test.ts`), killed with
 * SIGKILL at random points and started again: it opens the store given on
 * the command line through the library, registers the five workers of
 * {@linkcode CRASH_WORKFLOW}, starts a runtime with a short lease and short
 * maintenance intervals (so a dead node's steps come back within about a
 * second), prints `ready`, and runs until it is killed or sent SIGTERM.
 *
 * Each worker pauses a little (so kills land mid-step), writes its side
 * effect into `crash_effects` inside a `jobs.transaction` keyed by
 * `ctx.idempotencyKey` (the row once, its `attempts` counting every
 * committed try), pauses again (so kills land between the effect and the
 * step's record) and returns its result.
 *
 * Usage: workflow_crash_child.ts <location> <node> <seed>
 *
 * @module
 */

import { seeded } from "../support/seeded.ts";
import {
  defineWorker,
  type JobContext,
  type Jobs,
  openJobs,
  type PostgresTx,
  silentLogger,
  type SqliteTx,
} from "../../src/mod.ts";
import type { WorkflowOptions } from "../../src/workflow/definition.ts";
import { countedTable, pause } from "../support/crash_table.ts";

/** Items the `split` step fans `part` out to. */
export const PARTS = 3;

/**
 * Five steps, one fanned out, with a fan-in and a second edge into the last:
 * `reserve -> split -> part x PARTS -> merge -> finish`, and `reserve -> finish`.
 */
export const CRASH_WORKFLOW: WorkflowOptions = {
  id: "crash",
  steps: [
    // Every kill of an attempt uses one up: far more than 30 kills could take.
    { id: "reserve", worker: "reserve", maxAttempts: 100 },
    { id: "split", worker: "split", dependsOn: ["reserve"], maxAttempts: 100 },
    { id: "part", worker: "part", forEach: "split", maxAttempts: 100 },
    { id: "merge", worker: "merge", dependsOn: ["part"], maxAttempts: 100 },
    { id: "finish", worker: "finish", dependsOn: ["merge", "reserve"], maxAttempts: 100 },
  ],
};

/** The workers' side effects: each idempotency key, with `attempts` counting its committed tries. */
const effects = countedTable("crash_effects", "attempts");

/** Creates the side-effect table the workers write (both stores). */
export const createEffects = effects.create;

/** Every side effect written: its key and how many tries committed it. */
export const readEffects = effects.read;

async function main(): Promise<void> {
  const [location, node, seedText] = Deno.args;
  if (!location || !node || !seedText) {
    console.error("usage: workflow_crash_child.ts <location> <node> <seed>");
    Deno.exit(2);
  }
  const random = seeded(Number(seedText));
  const randomPause = (signal: AbortSignal) => pause(20 + Math.floor(random() * 80), signal);
  const step = (name: string, result: (ctx: JobContext) => unknown) =>
    defineWorker({
      name,
      perform: async (_args, ctx) => {
        await randomPause(ctx.signal);
        await effects.write(jobs, [ctx.idempotencyKey]);
        await randomPause(ctx.signal);
        return { result: result(ctx) };
      },
    });
  const workers = [
    step("reserve", () => "held"),
    step("split", () => Array.from({ length: PARTS }, (_, i) => i)),
    step("part", (ctx) => (ctx.workflow!.item as number) * 10),
    step("merge", (ctx) => {
      const parts = ctx.workflow!.results.part as number[];
      return { count: parts.length, total: parts.reduce((a, b) => a + b, 0) };
    }),
    step("finish", (ctx) => ({ merged: ctx.workflow!.results.merge })),
  ];
  // No workflow registered here: each run carries the definition it was started with.
  // (The workers reach `jobs` only once they run, after it is opened.)
  const jobs: Jobs<SqliteTx | PostgresTx> = await openJobs(location, {
    workers,
    logger: silentLogger,
  });
  Deno.addSignalListener("SIGTERM", async () => {
    await jobs.close({ grace: 2000 });
    Deno.exit(0);
  });
  await jobs.start({
    node,
    queues: { default: 4 },
    leaseMs: 900,
    heartbeatMs: 150,
    pollMs: 50,
    stageMs: 100,
    rescueMs: 100,
  });
  console.log("ready");
}

if (import.meta.main) await main();
